// The cpu backend's kv_cache: the reference kernel's, keeping its rows as
// F32, or as F16 for a model loaded with kv_f16 (llama.cpp's default: half the cache's
// memory, for rows rounded to 11 significant bits; the cpu attention reads
// them as stored). Not the default: the goldens' float32 rule does not
// hold with it, and it is no faster here (attention deep into a context is
// bound by its arithmetic and latency, not by the cache's bytes: measured
// with BM_AttentionLayers).
#include <immintrin.h>

#include "engine/core/quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/kv_cache.h"

namespace arch {

namespace {

// Eight values at a time with F16C, to nearest even as f32_to_f16 rounds
// (which the compiler leaves to a libgcc call a value: a 16-sequence step's
// appends took 1.2 ms of every 27, archrun bench-serve --kv-f16 --profile).
__attribute__((target("avx,f16c"))) void round_to_f16_f16c(const float* in, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) out[i] = f32_to_f16(in[i]);
}

Status kv_cache_cpu(KernelContext& ctx) {
  // Every CPU with AVX2 has F16C.
  return kv_cache_append(ctx, ctx.options->kv_f16 ? DType::F16 : DType::F32,
                         cpu_features().avx2 ? round_to_f16_f16c : nullptr);
}

}  // namespace

void register_cpu_kv_cache(OpTable& t) { t.add_kernel("kv_cache", "cpu", kv_cache_cpu); }

}  // namespace arch

// The cpu backend's kv_cache: the reference kernel's, keeping its rows as
// F32, or as F16 for a model loaded with kv_f16 (llama.cpp's default: half the cache's
// memory, for rows rounded to 11 significant bits; the cpu attention reads
// them as stored). Not the default: the goldens' float32 rule does not
// hold with it, and it is no faster here (attention deep into a context is
// bound by its arithmetic and latency, not by the cache's bytes: measured
// with BM_AttentionLayers).
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/kv_cache.h"

namespace arch {

namespace {

Status kv_cache_cpu(KernelContext& ctx) { return kv_cache_append(ctx, ctx.options->kv_f16 ? DType::F16 : DType::F32); }

}  // namespace

void register_cpu_kv_cache(OpTable& t) { t.add_kernel("kv_cache", "cpu", kv_cache_cpu); }

}  // namespace arch

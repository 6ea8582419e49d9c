// The cores' arithmetic peaks as the kernels meet them: every thread runs
// twelve independent chains of one vector instruction on registers (enough
// to cover its latency), best of a few runs. bench_kernels' yardsticks for
// prompts beside oneDNN's f32 GEMM: f32 FMA (F32 and F16 weights, widened
// to f32), bf16 dot products (BF16 weights, AVX-512 BF16) and int8 dot
// products (Q8_0 / Q4_0, AVX-512 VNNI). A multiply-add counts as two
// operations, as GFLOP/s of a matmul counts them.
#pragma once

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "kernels/cpu/cpu_features.h"

namespace arch {

// GFLOP/s (int8: GOP/s) on all threads; 0 where the CPU (or ARCHETYPE_CPU's
// cap) has no such instruction.
struct ComputePeaks {
  double f32 = 0, bf16 = 0, int8 = 0;
};

namespace peak_detail {

constexpr int64_t kIters = 1 << 22;

// A function `name`, compiled for `isa`, running twelve chains of `step`
// (of x, which the asm keeps the compiler from hoisting) from start(i):
// different starts, or the compiler merges the chains into one. The
// chains' sum (`add`), one lane of it (`lane`), is returned so that nothing
// is optimised away.
#define ARCH_PEAK_CHAINS(name, isa, T, x_init, start, step, add, lane)                             \
  __attribute__((target(isa))) inline float name() {                                               \
    auto x = x_init;                                                                               \
    T c0 = start(0), c1 = start(1), c2 = start(2), c3 = start(3), c4 = start(4), c5 = start(5),    \
      c6 = start(6), c7 = start(7), c8 = start(8), c9 = start(9), c10 = start(10), c11 = start(11); \
    for (int64_t i = 0; i < kIters; ++i) {                                                         \
      asm volatile("" : "+v"(x));                                                                  \
      c0 = step(c0); c1 = step(c1); c2 = step(c2); c3 = step(c3); c4 = step(c4); c5 = step(c5);    \
      c6 = step(c6); c7 = step(c7); c8 = step(c8); c9 = step(c9); c10 = step(c10); c11 = step(c11); \
    }                                                                                              \
    const T s = add(add(add(add(c0, c1), add(c2, c3)), add(add(c4, c5), add(c6, c7))),             \
                    add(add(c8, c9), add(c10, c11)));                                              \
    return float(lane(s));                                                                         \
  }

#define PS512(i) _mm512_set1_ps(float(i))
#define FMA512(c) _mm512_fmadd_ps(c, x, x)
ARCH_PEAK_CHAINS(f32_avx512, "avx512f", __m512, _mm512_set1_ps(0.5f), PS512, FMA512, _mm512_add_ps, _mm512_cvtss_f32)
#define PS256(i) _mm256_set1_ps(float(i))
#define FMA256(c) _mm256_fmadd_ps(c, x, x)
ARCH_PEAK_CHAINS(f32_avx2, "avx2,fma", __m256, _mm256_set1_ps(0.5f), PS256, FMA256, _mm256_add_ps, _mm256_cvtss_f32)
// x: 0.5 in bf16, in every half of every lane.
#define DPBF16(c) _mm512_dpbf16_ps(c, x, x)
ARCH_PEAK_CHAINS(bf16_avx512, "avx512f,avx512bf16", __m512, (__m512bh)_mm512_set1_epi16(0x3f00), PS512, DPBF16,
                 _mm512_add_ps, _mm512_cvtss_f32)
#define EPI512(i) _mm512_set1_epi32(i)
#define DPBUSD(c) _mm512_dpbusd_epi32(c, x, x)
ARCH_PEAK_CHAINS(int8_avx512, "avx512f,avx512bw,avx512vnni", __m512i, _mm512_set1_epi8(1), EPI512, DPBUSD,
                 _mm512_add_epi32, _mm512_cvtsi512_si32)
#undef PS512
#undef FMA512
#undef PS256
#undef FMA256
#undef DPBF16
#undef EPI512
#undef DPBUSD
#undef ARCH_PEAK_CHAINS

// Operations per second of `chains` on every thread, best of three runs;
// `ops` per instruction.
template <typename Chains>
double rate(double ops, Chains chains) {
  double best = 1e9;
  float sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel reduction(+ : sink)
    sink += chains();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  asm volatile("" : : "r"(sink));
  return ops * 12.0 * double(kIters) * double(omp_get_max_threads()) / best;
}

}  // namespace peak_detail

inline ComputePeaks measure_compute_peaks() {
  using namespace peak_detail;
  const CpuFeatures& cpu = cpu_features();
  ComputePeaks p;
  // Per instruction: lanes x 2 for an FMA; a bf16 dot product is 2
  // multiply-adds per f32 lane, an int8 one 4 per i32 lane.
  if (cpu.avx512) p.f32 = rate(16 * 2, f32_avx512) / 1e9;
  else if (cpu.avx2) p.f32 = rate(8 * 2, f32_avx2) / 1e9;
  if (cpu.avx512_bf16) p.bf16 = rate(16 * 4, bf16_avx512) / 1e9;
  if (cpu.avx512_vnni) p.int8 = rate(16 * 8, int8_avx512) / 1e9;
  return p;
}

}  // namespace arch

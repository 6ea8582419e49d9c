// BF16 weights times f32 activations on AVX-512 BF16 (vdpbf16ps: 32 bf16
// products per instruction, accumulated in f32). The activations are split
// x = hi + lo, both bf16, so each weight meets x at f32-grade precision
// (what is left out is below 2^-16 of |x|) in two instructions, where
// widening the weights to f32 takes four per 16 values. Two layouts: the
// weights in rows (one row at a time), and in 64-row tiles as a loaded
// model holds them (BF16x64). Used where the CPU has the instruction;
// gemv_hwy.cpp otherwise.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemv.h"

namespace arch {

namespace {

#define ARCH_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

template <int MR, int NR>
ARCH_AVX512_BF16 inline void tile(const uint16_t* hi, const uint16_t* lo, int64_t ldx, const uint16_t* w, int64_t K,
                                  float* y, int64_t ldy) {
  __m512 acc[MR][NR], acc_lo[MR][NR];  // two chains: hi and lo products don't wait on each other
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < NR; ++r) acc[m][r] = acc_lo[m][r] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    __m512bh wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = (__m512bh)_mm512_loadu_si512(w + r * K + k);
    for (int m = 0; m < MR; ++m) {
      const __m512bh h = (__m512bh)_mm512_loadu_si512(hi + m * ldx + k);
      const __m512bh l = (__m512bh)_mm512_loadu_si512(lo + m * ldx + k);
      for (int r = 0; r < NR; ++r) {
        acc[m][r] = _mm512_dpbf16_ps(acc[m][r], wv[r], h);
        acc_lo[m][r] = _mm512_dpbf16_ps(acc_lo[m][r], wv[r], l);
      }
    }
  }
  if (k < K) {  // the tail, masked: absent lanes load as zero
    const __mmask32 live = __mmask32((uint64_t(1) << (K - k)) - 1);
    __m512bh wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = (__m512bh)_mm512_maskz_loadu_epi16(live, w + r * K + k);
    for (int m = 0; m < MR; ++m) {
      const __m512bh h = (__m512bh)_mm512_maskz_loadu_epi16(live, hi + m * ldx + k);
      const __m512bh l = (__m512bh)_mm512_maskz_loadu_epi16(live, lo + m * ldx + k);
      for (int r = 0; r < NR; ++r) {
        acc[m][r] = _mm512_dpbf16_ps(acc[m][r], wv[r], h);
        acc_lo[m][r] = _mm512_dpbf16_ps(acc_lo[m][r], wv[r], l);
      }
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < NR; ++r) y[m * ldy + r] = _mm512_reduce_add_ps(_mm512_add_ps(acc[m][r], acc_lo[m][r]));
}

template <int MR>
ARCH_AVX512_BF16 void rows(const uint16_t* hi, const uint16_t* lo, int64_t ldx, const uint16_t* w, int64_t K, int64_t n0,
                           int64_t n1, float* y, int64_t ldy) {
  // One weight row at a time: a single sequential stream per thread is what
  // the hardware prefetchers follow best (measured: interleaving four rows
  // reached about half the bandwidth).
  for (int64_t n = n0; n < n1; ++n) tile<MR, 1>(hi, lo, ldx, w + n * K, K, y + n, ldy);
}

// Two bf16 activations broadcast to every 32-bit lane.
ARCH_AVX512_BF16 inline __m512bh pair(const uint16_t* x) {
  int32_t v;
  std::memcpy(&v, x, 4);
  return (__m512bh)_mm512_set1_epi32(v);
}

// One tile of BF16x64 weights (kernels/cpu/tiles.h) against MR rows
// of split activations: the four vectors of a pair's 256 bytes are rows
// 0-15, 16-31, 32-47 and 48-63, lane r of each one row; each meets the
// activation pair broadcast, so the 64 row sums build up with no sums
// across lanes, in 4 x 2 independent chains per row of activations. (The
// unroll pragmas matter: left as loops, GCC 12 keeps the accumulators in
// memory and the kernel runs at a third of the speed.)
template <int MR>
ARCH_AVX512_BF16 void tile64(const uint16_t* hi, const uint16_t* lo, int64_t ldx, const uint8_t* tile, int64_t K,
                             int rows, float* y, int64_t ldy) {
  __m512 acc[MR][4], acc_lo[MR][4];
  for (int m = 0; m < MR; ++m)
    for (int v = 0; v < 4; ++v) acc[m][v] = acc_lo[m][v] = _mm512_setzero_ps();
  for (int64_t at = 0; at < K; at += 2) {
    const uint8_t* pair_bytes = tile + (at / 16) * 2048 + (at % 16 / 2) * 256;
    __m512bh w[4];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) w[v] = (__m512bh)_mm512_loadu_si512(pair_bytes + 64 * v);
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const __m512bh h = pair(hi + m * ldx + at), l = pair(lo + m * ldx + at);
#pragma GCC unroll 4
      for (int v = 0; v < 4; ++v) {
        acc[m][v] = _mm512_dpbf16_ps(acc[m][v], w[v], h);
        acc_lo[m][v] = _mm512_dpbf16_ps(acc_lo[m][v], w[v], l);
      }
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int v = 0; v < 4 && 16 * v < rows; ++v) {
      const int live_rows = std::min(16, rows - 16 * v);
      _mm512_mask_storeu_ps(y + m * ldy + 16 * v, __mmask16((1u << live_rows) - 1),
                            _mm512_add_ps(acc[m][v], acc_lo[m][v]));
    }
}

}  // namespace

void gemv_bf16x64_split(const uint16_t* hi, const uint16_t* lo, int64_t M, int64_t ldx, const uint8_t* w, int64_t K,
                        int64_t n0, int64_t n1, float* y, int64_t ldy) {
  const size_t tile_bytes = size_t(K) * 2 * 64;
  for (int64_t m = 0; m < M; m += 4) {
    const int64_t mr = std::min<int64_t>(4, M - m);
    for (int64_t n = n0; n < n1; n += 64) {
      const uint8_t* tile = w + size_t(n / 64) * tile_bytes;
      const int rows = int(std::min<int64_t>(64, n1 - n));
      const uint16_t *h = hi + m * ldx, *l = lo + m * ldx;
      float* out = y + m * ldy + n;
      with_rows(mr, [&](auto MR) { tile64<MR>(h, l, ldx, tile, K, rows, out, ldy); });
    }
  }
}

bool has_avx512_bf16_dot() {
  return cpu_features().avx512_bf16;
}

void split_bf16(const float* x, int64_t n, uint16_t* hi, uint16_t* lo) {
  for (int64_t i = 0; i < n; ++i) {
    hi[i] = f32_to_bf16(x[i]);
    if (lo) lo[i] = f32_to_bf16(x[i] - bf16_to_f32(hi[i]));
  }
}

void gemv_bf16_split(const uint16_t* hi, const uint16_t* lo, int64_t M, int64_t ldx, const uint16_t* w, int64_t K,
                     int64_t n0, int64_t n1, float* y, int64_t ldy) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) rows<4>(hi + m * ldx, lo + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy);
  switch (M - m) {
    case 3: rows<3>(hi + m * ldx, lo + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy); break;
    case 2: rows<2>(hi + m * ldx, lo + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy); break;
    case 1: rows<1>(hi + m * ldx, lo + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy); break;
    default: break;
  }
}

}  // namespace arch

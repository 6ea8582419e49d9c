// Integer dot products on weights with 16 rows interleaved
// (kernels/cpu/tiles.h). Lane r of every vector is row r of the
// tile: the block's int32 sums, its scales and the running totals, so the
// 16 results come out stored as they are, with no reduction across lanes.
#include <immintrin.h>

// GCC 12's false positive on the intrinsics' undefined start values, as in
// quant_interleaved_gemm.cpp.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/quant.h"
#include "kernels/cpu/tiles.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

namespace {

constexpr int64_t B = kQuantBlock;

int offset_of(Tiles wt) { return wt == Tiles::Q8_0x16 ? 128 : 8; }

}  // namespace

void interleaved_gemv_portable(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                               int64_t ldy) {
  const int64_t K = a.K, blocks = K / B;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m = 0; m < a.M; ++m) {
      float total = 0, offset = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        int32_t dot = 0;
        for (int64_t k = b * B; k < (b + 1) * B; ++k)
          dot += int32_t(interleaved_value(wt, w, K, n, k)) * a.q[size_t(m * K + k)];
        const float d = interleaved_scale(wt, w, K, n, b);
        total += d * a.scale[size_t(m * blocks + b)] * float(dot);
        offset += d * a.scale_sum[size_t(m * blocks + b)];
      }
      y[m * ldy + n] = total - float(offset_of(wt)) * offset;
    }
}

namespace {

#define ARCH_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))

ARCH_VNNI inline __m512i broadcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm512_set1_epi32(v);
}

// One tile (16 rows) against row m of the activations.
template <bool Q4>
ARCH_VNNI void tile_vnni(const QuantizedActs& a, int64_t m, const uint8_t* tile, Tiles wt, int rows, float* y) {
  const int64_t K = a.K, blocks = K / B;
  const size_t block_bytes = interleaved_block_bytes(wt), values_bytes = interleaved_values_bytes(wt);
  const int8_t* q = a.q.data() + m * K;
  const float* scale = a.scale.data() + m * blocks;
  const float* scale_sum = a.scale_sum.data() + m * blocks;
  __m512 acc = _mm512_setzero_ps(), off = _mm512_setzero_ps();
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = tile + size_t(b) * block_bytes;
    __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
    if constexpr (Q4) {
      for (int g = 0; g < 4; ++g) {  // low nibbles: values 4g.., high: 16 + 4g..
        const __m512i v = _mm512_loadu_si512(block + 64 * g);
        const __m512i lo = _mm512_and_si512(v, low_nibbles);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low_nibbles);
        s0 = _mm512_dpbusd_epi32(s0, lo, broadcast4(q + b * B + 4 * g));
        s1 = _mm512_dpbusd_epi32(s1, hi, broadcast4(q + b * B + 16 + 4 * g));
      }
    } else {
      for (int g = 0; g < 8; g += 2) {
        const __m512i v0 = _mm512_loadu_si512(block + 64 * g), v1 = _mm512_loadu_si512(block + 64 * (g + 1));
        s0 = _mm512_dpbusd_epi32(s0, v0, broadcast4(q + b * B + 4 * g));
        s1 = _mm512_dpbusd_epi32(s1, v1, broadcast4(q + b * B + 4 * g + 4));
      }
    }
    const __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + values_bytes)));
    const __m512 sums = _mm512_cvtepi32_ps(_mm512_add_epi32(s0, s1));
    acc = _mm512_fmadd_ps(sums, _mm512_mul_ps(d, _mm512_set1_ps(scale[b])), acc);
    off = _mm512_fmadd_ps(d, _mm512_set1_ps(scale_sum[b]), off);
  }
  const __m512 offset = _mm512_set1_ps(float(offset_of(wt)));
  _mm512_mask_storeu_ps(y, __mmask16((1u << rows) - 1), _mm512_fnmadd_ps(offset, off, acc));
}

template <bool Q4>
ARCH_VNNI void tiles_vnni(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                          int64_t ldy) {
  // One row of activations at a time: decode's stream over the weights.
  // Several rows take interleaved_gemm (its passes of 4 read each tile once).
  const size_t tile_bytes = interleaved_tile_bytes(wt, a.K);
  for (int64_t m = 0; m < a.M; ++m)
    for (int64_t n = n0; n < n1; n += kInterleave) {
      const uint8_t* tile = w + size_t(n / kInterleave) * tile_bytes;
      const int rows = int(std::min<int64_t>(kInterleave, n1 - n));
      tile_vnni<Q4>(a, m, tile, wt, rows, y + m * ldy + n);
    }
}

}  // namespace

void interleaved_gemv(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  if (!has_avx512_vnni()) {
    if (cpu_features().avx2) return interleaved_gemv_avx2(a, w, wt, n0, n1, y, ldy);
    return interleaved_gemv_portable(a, w, wt, n0, n1, y, ldy);
  }
  if (wt == Tiles::Q4_0x16) tiles_vnni<true>(a, w, wt, n0, n1, y, ldy);
  else tiles_vnni<false>(a, w, wt, n0, n1, y, ldy);
}

}  // namespace arch

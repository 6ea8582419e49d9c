// Many rows of activations (prompts) against Q8_0 / Q4_0 weights in
// 16-row tiles (kernels/cpu/tiles.h), in integers: the activations
// quantized per block of 32 as for decode, vpdpbusd on the tiles as they
// are loaded, no dequantized copy of the weights. Compute-bound, so each
// weight vector loaded serves MR rows of activations and each broadcast of
// 4 activation bytes serves NT tiles: MR x NT int32 sums per block, applied
// to MR x NT f32 totals with the two scales once per block.
//
// The weights' offset (q8 stores q + 128, q4 q + 8) is taken off in
// integers: a block's sums start at -offset * sum(q of the activations), so
// the float work per block is one conversion, one product of scales and
// one fma per sum.
#include <immintrin.h>

// GCC 12 sees the intrinsics' own undefined start values (_mm512_cvtph_ps,
// _mm512_cvtepi32_ps) as uninitialised once inlined here: no such read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>

#include "engine/core/quant.h"
#include "kernels/cpu/tiles.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

namespace {

constexpr int64_t B = kQuantBlock;
constexpr int kAhead = 2;  // tile groups ahead: 1 measured no better than none at 16 rows

#define ARCH_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))

// One value group of every tile (values 4g..4g+3 of its 16 rows) against
// those 4 values of every row of activations, at q + at.
template <int MR, int NT>
ARCH_VNNI inline void dot_group(__m512i (&s)[MR][NT], const __m512i (&v)[NT], const int8_t* q, int64_t K,
                                int64_t at) {
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    const __m512i x = _mm512_set1_epi32(*reinterpret_cast<const int32_t*>(q + m * K + at));
    #pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) s[m][t] = _mm512_dpbusd_epi32(s[m][t], v[t], x);
  }
}

// MR rows of activations from m0 times NT consecutive tiles from `tile`;
// `rows` of the last tile are stored. Where `ahead` is not 0 (the first
// pass over these tiles, which come from memory), the NT tiles after them
// are prefetched across the blocks, so that the next pass finds them in
// cache: a batched decode step reads each weight once, and with 4 or 16
// rows it is as much a stream from memory as a computation.
template <int MR, int NT, bool Q4>
ARCH_VNNI void micro_tile(const QuantizedActs& a, int64_t m0, const uint8_t* tile, size_t tile_bytes, int rows,
                          float* y, int64_t ldy, uintptr_t ahead, size_t ahead_per_block) {
  const int64_t K = a.K, blocks = K / B;
  const size_t block_bytes = Q4 ? 4 * 64 + 32 : 8 * 64 + 32, values_bytes = block_bytes - 32;
  const int32_t offset = Q4 ? 8 : 128;
  __m512 acc[MR][NT];
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) acc[m][t] = _mm512_setzero_ps();
  const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i s[MR][NT];
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512i start = _mm512_set1_epi32(-offset * a.sum[size_t((m0 + m) * blocks + b)]);
      #pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) s[m][t] = start;
    }
    const int8_t* q = a.q.data() + m0 * K + b * B;
    const uint8_t* block = tile + size_t(b) * block_bytes;
    if (ahead) {
      // Integers: the next tiles may lie past the matrix (a prefetch of
      // any address is harmless).
      const uintptr_t from = ahead + uintptr_t(b) * ahead_per_block;
      for (uintptr_t line = 0; line < ahead_per_block; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(from + line), _MM_HINT_T0);
    }
    if constexpr (Q4) {
      // The high nibbles' sums apart: twice the independent chains of
      // vpdpbusd, which MR x NT = 8 alone could not keep 2 a cycle busy.
      __m512i s_hi[MR][NT];
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m)
        #pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) s_hi[m][t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        __m512i lo[NT], hi[NT];
        #pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) {
          const __m512i v = _mm512_loadu_si512(block + t * tile_bytes + 64 * g);
          lo[t] = _mm512_and_si512(v, low_nibbles);
          hi[t] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low_nibbles);
        }
        dot_group<MR, NT>(s, lo, q, K, 4 * g);
        dot_group<MR, NT>(s_hi, hi, q, K, 16 + 4 * g);
      }
      #pragma GCC unroll 8
      for (int m = 0; m < MR; ++m)
        #pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) s[m][t] = _mm512_add_epi32(s[m][t], s_hi[m][t]);
    } else {
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        __m512i v[NT];
        #pragma GCC unroll 8
        for (int t = 0; t < NT; ++t) v[t] = _mm512_loadu_si512(block + t * tile_bytes + 64 * g);
        dot_group<MR, NT>(s, v, q, K, 4 * g);
      }
    }
    __m512 d[NT];
    #pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const auto* scales = reinterpret_cast<const __m256i*>(block + t * tile_bytes + values_bytes);
      d[t] = _mm512_cvtph_ps(_mm256_loadu_si256(scales));
    }
    #pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      const __m512 sa = _mm512_set1_ps(a.scale[size_t((m0 + m) * blocks + b)]);
      #pragma GCC unroll 8
      for (int t = 0; t < NT; ++t)
        acc[m][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[m][t]), _mm512_mul_ps(d[t], sa), acc[m][t]);
    }
  }
  const __mmask16 live = __mmask16((1u << rows) - 1);
  #pragma GCC unroll 8
  for (int m = 0; m < MR; ++m) {
    #pragma GCC unroll 8
    for (int t = 0; t + 1 < NT; ++t) _mm512_storeu_ps(y + (m0 + m) * ldy + 16 * t, acc[m][t]);
    _mm512_mask_storeu_ps(y + (m0 + m) * ldy + 16 * (NT - 1), live, acc[m][NT - 1]);
  }
}

// Rows [m0, m1) of activations against NT tiles: 4 rows a pass, the last
// 1-3 in one pass of their own; the first pass prefetches the next tiles
// when `prefetch`.
template <int NT, bool Q4>
ARCH_VNNI void rows_of_tiles(const QuantizedActs& a, int64_t m0, int64_t m1, const uint8_t* tile, size_t tile_bytes,
                             int rows, float* y, int64_t ldy, bool prefetch) {
  constexpr int MR = 4;
  // The next tiles' bytes, shared out over the passes and their blocks.
  const int64_t passes = (m1 - m0 + MR - 1) / MR, blocks = a.K / B;
  const size_t per_block = prefetch ? (NT * tile_bytes / size_t(passes * blocks) + 64) / 64 * 64 : 0;
  uintptr_t ahead = prefetch ? reinterpret_cast<uintptr_t>(tile) + kAhead * NT * tile_bytes : 0;
  const uintptr_t per_pass = per_block * size_t(blocks);
  int64_t m = m0;
  for (; m + MR <= m1; m += MR, ahead += ahead ? per_pass : 0)
    micro_tile<MR, NT, Q4>(a, m, tile, tile_bytes, rows, y, ldy, ahead, per_block);
  switch (m1 - m) {
    case 3: micro_tile<3, NT, Q4>(a, m, tile, tile_bytes, rows, y, ldy, ahead, per_block); break;
    case 2: micro_tile<2, NT, Q4>(a, m, tile, tile_bytes, rows, y, ldy, ahead, per_block); break;
    case 1: micro_tile<1, NT, Q4>(a, m, tile, tile_bytes, rows, y, ldy, ahead, per_block); break;
    default: break;
  }
}

template <bool Q4>
ARCH_VNNI void gemm_vnni(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                         int64_t ldy) {
  constexpr int NT = 2;
  const size_t tile_bytes = interleaved_tile_bytes(wt, a.K);
  // Activations in row blocks that stay in L2 while the tiles of [n0, n1)
  // pass over them.
  const int64_t m_block = std::max<int64_t>(4, (int64_t(1) << 17) / a.K / 4 * 4);
  for (int64_t mb = 0; mb < a.M; mb += m_block) {
    const int64_t me = std::min(a.M, mb + m_block);
    for (int64_t n = n0; n < n1;) {
      const uint8_t* tile = w + size_t(n / kInterleave) * tile_bytes;
      const int64_t left = n1 - n;
      if (left > kInterleave * (NT - 1)) {
        const int rows = int(std::min<int64_t>(kInterleave, left - kInterleave * (NT - 1)));
        rows_of_tiles<NT, Q4>(a, mb, me, tile, tile_bytes, rows, y + n, ldy, mb == 0);
        n += kInterleave * NT;
      } else {
        rows_of_tiles<1, Q4>(a, mb, me, tile, tile_bytes, int(std::min<int64_t>(kInterleave, left)), y + n, ldy,
                             false);
        n += kInterleave;
      }
    }
  }
}

}  // namespace

void interleaved_gemm(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  if (!has_avx512_vnni()) return interleaved_gemv(a, w, wt, n0, n1, y, ldy);  // AVX2's serves both
  if (wt == Tiles::Q4_0x16) gemm_vnni<true>(a, w, wt, n0, n1, y, ldy);
  else gemm_vnni<false>(a, w, wt, n0, n1, y, ldy);
}

}  // namespace arch

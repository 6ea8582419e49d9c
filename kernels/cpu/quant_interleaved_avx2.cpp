// Integer dot products on Q8_0 / Q4_0 weights with 16 rows interleaved
// (kernels/cpu/tiles.h) for CPUs with AVX2 but not AVX-512 VNNI,
// decode and prompts alike. A tile's 64-byte value group holds 4 values of
// each of its 16 rows; its two 32-byte halves are rows 0-7 and 8-15, and
// lane r of every vector here is row r of a half: vpmaddubsw against 4
// activation bytes broadcast, then vpmaddwd, gives the 8 rows' sums with no
// sums across lanes, and each block's two scales are applied once for 8
// rows. Against the row layout's kernel (quant_dot_avx2.cpp) this saves the
// per-block conversion, broadcast and FMA of every row.
//
// vpmaddubsw's int16 pair sums saturate at 32767:
//   - Q4_0: a nibble (0..15) times |q| <= 127, two of them, is at most
//     3810, so a block's 8 products per lane (4 groups, low and high
//     nibbles) add up in int16 (30480) and widen to int32 once per block;
//     the weights' offset of 8 comes off as -8 * sum(q) in the int32 sums'
//     starting value.
//   - Q8_0: offset binary (0..255) would saturate; the bytes are made
//     signed (q - 128) and their sign moved onto the activations, and each
//     group widens to int32 at once (two products reach 32512).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/core/quant.h"
#include "kernels/cpu/tiles.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

namespace {

constexpr int64_t B = kQuantBlock;
constexpr int kHalf = kInterleave / 2;  // rows per 32-byte half of a value group

#define ARCH_AVX2 __attribute__((target("avx2,fma,f16c")))
#define ARCH_AVX2_INLINE inline __attribute__((always_inline, target("avx2,fma,f16c")))

ARCH_AVX2_INLINE __m256i broadcast4(const int8_t* q) {
  int32_t v;
  std::memcpy(&v, q, 4);
  return _mm256_set1_epi32(v);
}

// Halves [h0, h0 + NH) of one tile (NH = 2: all 16 rows) against MR rows
// of activations from m0; `rows` of the tile are stored.
template <int MR, int NH, bool Q4>
ARCH_AVX2_INLINE void half_tiles(const QuantizedActs& a, int64_t m0, const uint8_t* tile, int h0, int rows, float* y,
                                 int64_t ldy) {
  const int64_t K = a.K, blocks = K / B;
  constexpr size_t values_bytes = Q4 ? 4 * 64 : 8 * 64, block_bytes = values_bytes + 2 * kInterleave;
  const __m256i ones = _mm256_set1_epi16(1), low_nibbles = _mm256_set1_epi8(0x0F), bias = _mm256_set1_epi8(char(0x80));
  __m256 acc[MR][NH];
  for (int m = 0; m < MR; ++m)
    for (int h = 0; h < NH; ++h) acc[m][h] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = tile + size_t(b) * block_bytes;
    __m256i sums[MR][NH];
    if constexpr (Q4) {
      __m256i s16[MR][NH];
#pragma GCC unroll 4
      for (int m = 0; m < MR; ++m)
        for (int h = 0; h < NH; ++h) s16[m][h] = _mm256_setzero_si256();
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {  // low nibbles: values 4g.., high: 16 + 4g..
#pragma GCC unroll 2
        for (int h = 0; h < NH; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * g + 32 * (h0 + h)));
          const __m256i lo = _mm256_and_si256(v, low_nibbles);
          const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low_nibbles);
#pragma GCC unroll 4
          for (int m = 0; m < MR; ++m) {
            const int8_t* q = a.q.data() + (m0 + m) * K + b * B;
            const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, broadcast4(q + 4 * g)),
                                               _mm256_maddubs_epi16(hi, broadcast4(q + 16 + 4 * g)));
            s16[m][h] = _mm256_add_epi16(s16[m][h], p);
          }
        }
      }
#pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const __m256i start = _mm256_set1_epi32(-8 * a.sum[size_t((m0 + m) * blocks + b)]);
        for (int h = 0; h < NH; ++h) sums[m][h] = _mm256_add_epi32(start, _mm256_madd_epi16(s16[m][h], ones));
      }
    } else {
#pragma GCC unroll 4
      for (int m = 0; m < MR; ++m)
        for (int h = 0; h < NH; ++h) sums[m][h] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
#pragma GCC unroll 2
        for (int h = 0; h < NH; ++h) {
          const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 64 * g + 32 * (h0 + h)));
          const __m256i s = _mm256_xor_si256(v, bias);  // q - 128
          const __m256i magnitude = _mm256_abs_epi8(s);
#pragma GCC unroll 4
          for (int m = 0; m < MR; ++m) {
            const __m256i x = _mm256_sign_epi8(broadcast4(a.q.data() + (m0 + m) * K + b * B + 4 * g), s);
            sums[m][h] = _mm256_add_epi32(sums[m][h], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitude, x), ones));
          }
        }
      }
    }
    const uint16_t* scales = reinterpret_cast<const uint16_t*>(block + values_bytes);
#pragma GCC unroll 2
    for (int h = 0; h < NH; ++h) {
      const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + kHalf * (h0 + h))));
#pragma GCC unroll 4
      for (int m = 0; m < MR; ++m)
        acc[m][h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums[m][h]),
                                    _mm256_mul_ps(d, _mm256_set1_ps(a.scale[size_t((m0 + m) * blocks + b)])),
                                    acc[m][h]);
    }
  }
  for (int h = 0; h < NH; ++h) {
    const int live = std::clamp(rows - kHalf * (h0 + h), 0, kHalf);
    if (live == 0) continue;
    for (int m = 0; m < MR; ++m) {
      float* out = y + (m0 + m) * ldy + kHalf * (h0 + h);
      if (live == kHalf) {
        _mm256_storeu_ps(out, acc[m][h]);
      } else {
        alignas(32) float lanes[kHalf];
        _mm256_store_ps(lanes, acc[m][h]);
        std::memcpy(out, lanes, size_t(live) * sizeof(float));
      }
    }
  }
}

// One tile against MR rows of activations: both halves in one pass for
// one or two rows; for more, a pass per half, which keeps the sums in
// registers.
template <int MR, bool Q4>
ARCH_AVX2 void tile_avx2(const QuantizedActs& a, int64_t m0, const uint8_t* tile, int rows, float* y, int64_t ldy) {
  if constexpr (MR <= 2) {
    half_tiles<MR, 2, Q4>(a, m0, tile, 0, rows, y, ldy);
  } else {
    half_tiles<MR, 1, Q4>(a, m0, tile, 0, rows, y, ldy);
    if (rows > kHalf) half_tiles<MR, 1, Q4>(a, m0, tile, 1, rows, y, ldy);
  }
}

// Tiles outside, rows of activations inside: a tile (8 KiB of Q4_0 at K =
// 896) stays in L1 while the activations pass over it.
template <bool Q4>
ARCH_AVX2 void tiles_avx2(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                          int64_t ldy) {
  const size_t tile_bytes = interleaved_tile_bytes(wt, a.K);
  for (int64_t n = n0; n < n1; n += kInterleave) {
    const uint8_t* tile = w + size_t(n / kInterleave) * tile_bytes;
    const int rows = int(std::min<int64_t>(kInterleave, n1 - n));
    for (int64_t m = 0; m < a.M; m += 4)
      with_rows(std::min<int64_t>(4, a.M - m), [&](auto MR) { tile_avx2<MR, Q4>(a, m, tile, rows, y + n, ldy); });
  }
}

}  // namespace

void interleaved_gemv_avx2(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                           int64_t ldy) {
  if (wt == Tiles::Q4_0x16) tiles_avx2<true>(a, w, wt, n0, n1, y, ldy);
  else tiles_avx2<false>(a, w, wt, n0, n1, y, ldy);
}

}  // namespace arch

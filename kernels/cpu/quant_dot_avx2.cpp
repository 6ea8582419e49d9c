// Q8_0 / Q4_0 rows on AVX2 (CPUs without AVX-512 VNNI): the same integer
// dot products as the VNNI kernel, a block of 32 at a time with
// vpmaddubsw (unsigned x signed bytes, pairs summed to int16) and vpmaddwd
// (pairs of those to int32).
//
// vpmaddubsw saturates at 32767, so the weights' range matters:
//   - Q4_0 nibbles (0..15) times |q| <= 127 stay far below it; the weights'
//     offset of 8 comes off afterwards, as on VNNI (scale * sum(q) per block);
//   - Q8_0's offset-binary bytes (0..255) would not: they are made signed
//     (q - 128), and their sign moved onto the activations (|w| <= 128, so
//     a pair is at most 2 * 128 * 127 = 32512).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/quant.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

namespace {

constexpr int64_t B = kQuantBlock;

#define ARCH_AVX2 __attribute__((target("avx2,fma,f16c")))

ARCH_AVX2 inline float f16_scale(const uint16_t* scales, int64_t b) {
  uint16_t bits;
  std::memcpy(&bits, scales + b, 2);
  return _cvtsh_ss(bits);
}

// The int32 sums of one block of weights (32 unsigned bytes, Q4_0 already
// split into nibbles) against 32 activations, as 8 lanes.
ARCH_AVX2 inline __m256i block_dot(__m256i w, const int8_t* q, bool q8) {
  __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
  if (q8) {
    const __m256i s = _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80)));  // q - 128
    x = _mm256_sign_epi8(x, s);
    w = _mm256_abs_epi8(s);
  }
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

ARCH_AVX2 inline float reduce(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Block b of one weight row (w: its 32 bytes) against MR rows of
// activations: the int32 sums scaled into acc, and for Q4_0 the block's
// share of the offset into off.
template <int MR>
ARCH_AVX2 inline void add_block(const QuantizedActs& a, int64_t m0, __m256i w, float dw, int64_t b, bool q8,
                                __m256* acc, float* off) {
  const int64_t K = a.K, blocks = K / B;
  for (int m = 0; m < MR; ++m) {
    const size_t at = size_t((m0 + m) * blocks + b);
    const __m256i dot = block_dot(w, a.q.data() + (m0 + m) * K + b * B, q8);
    acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(dw * a.scale[at]), acc[m]);
    if (!q8) off[m] += dw * a.scale_sum[at];
  }
}

// MR rows of activations (in natural order) against one weight row.
template <int MR>
ARCH_AVX2 void row_avx2(const QuantizedActs& a, int64_t m0, const uint8_t* row, DType wt, float* y, int64_t ldy) {
  const int64_t K = a.K, blocks = K / B;
  const bool q8 = wt == DType::Q8_0;
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(row + quant_scales_offset(wt, K));
  __m256 acc[MR];
  float off[MR];
  for (int m = 0; m < MR; ++m) {
    acc[m] = _mm256_setzero_ps();
    off[m] = 0;
  }
  if (q8) {
    for (int64_t b = 0; b < blocks; ++b)
      add_block<MR>(a, m0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * B)), f16_scale(scales, b),
                    b, true, acc, off);
  } else {  // a 32-byte group holds blocks b (low nibbles) and b + 1 (high)
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
    for (int64_t b = 0; b < blocks; b += 2) {
      const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * B / 2));
      add_block<MR>(a, m0, _mm256_and_si256(packed, low_nibbles), f16_scale(scales, b), b, false, acc, off);
      add_block<MR>(a, m0, _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibbles), f16_scale(scales, b + 1),
                    b + 1, false, acc, off);
    }
  }
  for (int m = 0; m < MR; ++m) y[(m0 + m) * ldy] = reduce(acc[m]) - 8.0f * off[m];
}

}  // namespace

ARCH_AVX2 void quant_gemv_avx2(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                               int64_t ldy) {
  const size_t row_bytes = quant_row_bytes(wt, a.K);
  for (int64_t m = 0; m < a.M; m += 4) {
    const int64_t mr = std::min<int64_t>(4, a.M - m);
    for (int64_t n = n0; n < n1; ++n) {
      const uint8_t* row = w + size_t(n) * row_bytes;
      with_rows(mr, [&](auto MR) { row_avx2<MR>(a, m, row, wt, y + n, ldy); });
    }
  }
}

}  // namespace arch

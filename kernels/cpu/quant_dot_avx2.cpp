// Q8_0 / Q4_0 rows on AVX2 (CPUs without AVX-512 VNNI), which MoE experts
// keep (dense matrices take 16-row tiles and quant_interleaved_avx2.cpp):
// the same integer dot products as the VNNI kernel, a block of 32 at a
// time with vpmaddubsw (unsigned x signed bytes, pairs summed to int16)
// and vpmaddwd (pairs of those to int32). Also the AVX2 activation
// quantizer every AVX2 path uses.
//
// vpmaddubsw saturates at 32767, so the weights' range matters:
//   - Q4_0 nibbles (0..15) times |q| <= 127 stay far below it; the weights'
//     offset of 8 comes off afterwards, as on VNNI (scale * sum(q) per block);
//   - Q8_0's offset-binary bytes (0..255) would not: they are made signed
//     (q - 128), and their sign moved onto the activations (|w| <= 128, so
//     a pair is at most 2 * 128 * 127 = 32512).
//
// What sets its speed (one core, in cache, 4864 x 896: Q4_0 194 -> 136
// µs, Q8_0 211 -> 163 µs, against a block at a time with its scales
// in scalars):
//   - the two scales' products are formed 8 blocks at a time (one f16
//     conversion, one multiply, and for Q4_0 one FMA for the offset) and
//     each block takes its lane with a permute;
//   - consecutive blocks add into separate accumulators, so no chain of
//     dependent FMAs sets the pace;
//   - everything a row does is inlined into the row loop: a call per row
//     or per 8 blocks cost more than the work (K = 896 is 28 blocks).
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "engine/core/quant.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

namespace {

constexpr int64_t B = kQuantBlock;

#define ARCH_AVX2 __attribute__((target("avx2,fma,f16c")))
// The helpers inlined into the row loop: calls per row or per group of
// blocks cost more than their work (K = 896 is only 28 blocks a row).
#define ARCH_AVX2_INLINE inline __attribute__((always_inline, target("avx2,fma,f16c")))

// The int32 sums of one block of weights (32 unsigned bytes, Q4_0 already
// split into nibbles) against 32 activations x, as 8 lanes.
ARCH_AVX2_INLINE __m256i block_dot(__m256i w, __m256i x, bool q8) {
  if (q8) {
    const __m256i s = _mm256_xor_si256(w, _mm256_set1_epi8(char(0x80)));  // q - 128
    x = _mm256_sign_epi8(x, s);
    w = _mm256_abs_epi8(s);
  }
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}
ARCH_AVX2_INLINE __m256i block_dot(__m256i w, const int8_t* q, bool q8) {
  return block_dot(w, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q)), q8);
}

ARCH_AVX2_INLINE float reduce(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// The products dw * dx of blocks [b, b + n) of one weight row (its f16
// scales at dw) and MR rows of activations, as the lanes of sv[m]; for
// Q4_0 the offset's share, dw * scale_sum, added into off. A whole group
// of 8 or 4 stays in registers; a last group of another length is put
// together in memory, one block at a time.
template <int MR>
ARCH_AVX2_INLINE void scale_products(const QuantizedActs& a, int64_t m0, const uint16_t* dw, int64_t b, int64_t n,
                                     bool q8, __m256* sv, __m256* off) {
  const int64_t blocks = a.K / B;
  if (n == 8) {
    const __m256 w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(dw + b)));
    for (int m = 0; m < MR; ++m) {
      const size_t at = size_t((m0 + m) * blocks + b);
      sv[m] = _mm256_mul_ps(w, _mm256_loadu_ps(a.scale.data() + at));
      if (!q8) off[m] = _mm256_fmadd_ps(w, _mm256_loadu_ps(a.scale_sum.data() + at), off[m]);
    }
    return;
  }
  if (n == 4) {  // e.g. the last of 28 blocks (K = 896)
    const __m128 w = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(dw + b)));
    for (int m = 0; m < MR; ++m) {
      const size_t at = size_t((m0 + m) * blocks + b);
      sv[m] = _mm256_set_m128(_mm_setzero_ps(), _mm_mul_ps(w, _mm_loadu_ps(a.scale.data() + at)));
      if (!q8)
        off[m] = _mm256_add_ps(
            off[m], _mm256_set_m128(_mm_setzero_ps(), _mm_mul_ps(w, _mm_loadu_ps(a.scale_sum.data() + at))));
    }
    return;
  }
  alignas(32) float s[MR][8] = {};
  for (int64_t j = 0; j < n; ++j) {
    const float w = _cvtsh_ss(dw[b + j]);
    for (int m = 0; m < MR; ++m) {
      const size_t at = size_t((m0 + m) * blocks + b + j);
      s[m][j] = w * a.scale[at];
      if (!q8) off[m] = _mm256_add_ps(off[m], _mm256_set_m128(_mm_setzero_ps(), _mm_set_ss(w * a.scale_sum[at])));
    }
  }
  for (int m = 0; m < MR; ++m) sv[m] = _mm256_load_ps(s[m]);
}

// The weights of blocks b and b + 1 of one row as unsigned bytes.
template <bool Q8>
ARCH_AVX2_INLINE void load_pair(const uint8_t* row, int64_t b, __m256i& w0, __m256i& w1) {
  if (Q8) {
    w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * B));
    w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + (b + 1) * B));
  } else {  // a 32-byte group holds blocks b (low nibbles) and b + 1 (high)
    const __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * B / 2));
    const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
    w0 = _mm256_and_si256(packed, low_nibbles);
    w1 = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibbles);
  }
}

// MR rows of activations (in natural order) against one weight row. Each
// row's blocks go round its accumulators (four for a lone row, else two
// each; Q4_0 with 3-4 rows one each, which are chains enough and spare the
// registers: prompt 128 on 0.5B q4 in rows 128 -> 161 tok/s, while Q8_0
// lost as much that way), so that consecutive FMAs do not wait on each
// other.
template <int MR, bool Q8>
ARCH_AVX2_INLINE void row_avx2(const QuantizedActs& a, int64_t m0, const uint8_t* row, float* y, int64_t ldy) {
  constexpr DType wt = Q8 ? DType::Q8_0 : DType::Q4_0;
  const int64_t K = a.K, blocks = K / B;
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(row + quant_scales_offset(wt, K));
  __m256 c0[MR], c1[MR], c2[MR], c3[MR], off[MR];
  for (int m = 0; m < MR; ++m) c0[m] = c1[m] = c2[m] = c3[m] = off[m] = _mm256_setzero_ps();
  __m256* const odd = MR >= 3 && !Q8 ? c0 : c1;
  __m256* const c2_or_c0 = MR == 1 ? c2 : c0;
  __m256* const c3_or_odd = MR == 1 ? c3 : odd;
  __m256 sv[MR];  // dw * dx of the group's blocks
  // Lane j of sv[m] in every lane (a permute: a load of it from memory
  // would wait on the store that put it there).
  auto lane = [&](int m, int64_t j) ARCH_AVX2 { return _mm256_permutevar8x32_ps(sv[m], _mm256_set1_epi32(int(j))); };
  // Blocks j and j + 1 of the group starting at block b8 into accumulators e and o.
  auto pair = [&](int64_t b8, int64_t j, __m256* e, __m256* o) ARCH_AVX2 {
    __m256i w0, w1;
    load_pair<Q8>(row, b8 + j, w0, w1);
#pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const int8_t* q = a.q.data() + (m0 + m) * K + (b8 + j) * B;
      e[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(w0, q, Q8)), lane(m, j), e[m]);
      o[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(w1, q + B, Q8)), lane(m, j + 1), o[m]);
    }
  };
  for (int64_t b8 = 0; b8 < blocks; b8 += 8) {
    const int64_t n = std::min<int64_t>(8, blocks - b8);
    scale_products<MR>(a, m0, scales, b8, n, Q8, sv, off);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
      pair(b8, j, c0, odd);
      pair(b8, j + 2, c2_or_c0, c3_or_odd);
    }
    for (; j + 2 <= n; j += 2) pair(b8, j, c0, odd);
    if (j < n) {  // an odd block count (Q8_0 only: Q4_0 rows are whole 64s)
      const int64_t b = b8 + j;
      const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + b * B));
      for (int m = 0; m < MR; ++m)
        c0[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(w0, a.q.data() + (m0 + m) * K + b * B, Q8)),
                                lane(m, j), c0[m]);
    }
  }
  const __m256 offset = _mm256_set1_ps(8.0f);  // Q4_0's; Q8_0's went onto the activations' signs
  for (int m = 0; m < MR; ++m) {
    __m256 sum = _mm256_add_ps(c0[m], c1[m]);
    if (MR == 1) sum = _mm256_add_ps(sum, _mm256_add_ps(c2[m], c3[m]));
    y[(m0 + m) * ldy] = reduce(Q8 ? sum : _mm256_fnmadd_ps(offset, off[m], sum));
  }
}

// Weight rows [n0, n1) against MR rows of activations from m0.
template <int MR, bool Q8>
ARCH_AVX2 void rows_avx2(const QuantizedActs& a, int64_t m0, const uint8_t* w, int64_t n0, int64_t n1, float* y,
                         int64_t ldy) {
  const size_t row_bytes = quant_row_bytes(Q8 ? DType::Q8_0 : DType::Q4_0, a.K);
  for (int64_t n = n0; n < n1; ++n) {
    // Decode: the start of the row four ahead asked for, before the
    // hardware prefetcher gets going in it (0.5B q8 in rows 44-49 -> 49-55
    // tok/s; the whole of a long row cost 30% in cache).
    if (MR == 1 && n + 4 < n1) {
      const uint8_t* ahead = w + size_t(n + 4) * row_bytes;
      for (size_t line = 0; line < std::min<size_t>(row_bytes, 1024); line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
    }
    row_avx2<MR, Q8>(a, m0, w + size_t(n) * row_bytes, y + n, ldy);
  }
}

}  // namespace

void quant_gemv_avx2(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                     int64_t ldy) {
  for (int64_t m = 0; m < a.M; m += 4)
    with_rows(std::min<int64_t>(4, a.M - m), [&](auto MR) {
      if (wt == DType::Q8_0) rows_avx2<MR, true>(a, m, w, n0, n1, y, ldy);
      else rows_avx2<MR, false>(a, m, w, n0, n1, y, ldy);
    });
}

// One block of 32 activations to int8, as quantize_block does (the vector
// conversion rounds ties to even, as nearbyint does).
ARCH_AVX2 void quantize_block_avx2(const float* v, int8_t* q, float& scale, float& scale_sum, int32_t& block_sum) {
  __m256 x[4];
  __m256 amax = _mm256_setzero_ps();
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (int i = 0; i < 4; ++i) {
    x[i] = _mm256_loadu_ps(v + 8 * i);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, x[i]));
  }
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  const float largest = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4)));
  const float d = largest / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
  __m256i n[4];
  for (int i = 0; i < 4; ++i) n[i] = _mm256_cvtps_epi32(_mm256_mul_ps(x[i], _mm256_set1_ps(inv)));
  // Packing works within 128-bit halves: 4-byte groups come out as
  // n0[0:4] n1[0:4] n2[0:4] n3[0:4] n0[4:8] n1[4:8] n2[4:8] n3[4:8].
  const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q),
                      _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  const __m256i s = _mm256_add_epi32(_mm256_add_epi32(n[0], n[1]), _mm256_add_epi32(n[2], n[3]));
  __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
  s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
  block_sum = _mm_cvtsi128_si32(s4);
  scale = d;
  scale_sum = d * float(block_sum);
}

}  // namespace arch

// One k-quant super-block (engine/core/kquant.h) taken apart on AVX2: as
// eight 32-byte chunks of unsigned q in natural order (chunk j: values
// 32j..32j+31; Q4_K 0..15, Q5_K 0..31, Q6_K 0..63), the int16 scale
// vectors vpmaddwd takes against each chunk's pair sums, Q4_K / Q5_K's
// packed scales and mins as bytes, and the prefetch every k-quant kernel
// runs ahead of its rows. Shared by the AVX2 and VNNI kernels and the bf16
// rows of the prompt path; inlined into each (j a constant once their
// loops unroll).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/core/dtype.h"
#include "kernels/cpu/kquant_dot.h"

namespace arch {

#define ARCH_KQ_AVX2_INLINE inline __attribute__((always_inline, target("avx2,fma,f16c")))

// Bytes per super-block (kquant_block_bytes), known to the compiler.
template <DType WT>
constexpr size_t kq_block_bytes = kquant_block_bytes(WT);

ARCH_KQ_AVX2_INLINE __m256i kq_load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

// Chunk j of the super-block at `b`.
template <DType WT>
ARCH_KQ_AVX2_INLINE __m256i kquant_chunk(const uint8_t* b, int j) {
  const __m256i low4 = _mm256_set1_epi8(0x0F);
  if constexpr (WT == DType::Q6_K) {
    // Each 128 values: 64 bytes of low nibbles (ql) and 32 of bit pairs
    // (qh). Chunk c of the half: ql bytes 32(c % 2).., low nibbles for
    // c < 2; qh bits 2c, 2c + 1 moved to bits 4, 5.
    const int half = j / 4, c = j % 4;
    const __m256i ql = kq_load(b + 64 * half + 32 * (c % 2));
    const __m256i qh = kq_load(b + 128 + 32 * half);
    const __m256i q = c < 2 ? _mm256_and_si256(ql, low4) : _mm256_and_si256(_mm256_srli_epi16(ql, 4), low4);
    __m256i h;
    switch (c) {
      case 0: h = _mm256_slli_epi16(qh, 4); break;
      case 1: h = _mm256_slli_epi16(qh, 2); break;
      case 2: h = qh; break;
      default: h = _mm256_srli_epi16(qh, 2); break;
    }
    return _mm256_or_si256(q, _mm256_and_si256(h, _mm256_set1_epi8(0x30)));
  } else {
    // 32 bytes of q per 64 values: chunk 2i the low nibbles, 2i + 1 the
    // high ones; Q5_K's fifth bit of chunk j is bit j of qh (moved to 4).
    const __m256i packed = kq_load(b + (WT == DType::Q5_K ? 48 : 16) + 32 * (j / 2));
    __m256i q = j % 2 == 0 ? _mm256_and_si256(packed, low4) : _mm256_and_si256(_mm256_srli_epi16(packed, 4), low4);
    if constexpr (WT == DType::Q5_K) {
      const __m256i qh = kq_load(b + 16);
      const __m256i h = j <= 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
      q = _mm256_or_si256(q, _mm256_and_si256(h, _mm256_set1_epi8(0x10)));
    }
    return q;
  }
}

// Eight small integers (int32 lanes, |v| < 2^15) with each lane's int16
// halves both the value: what vpmaddwd multiplies a pair of sums by.
ARCH_KQ_AVX2_INLINE __m256i kq_both_halves(__m256i v) {
  return _mm256_blend_epi16(v, _mm256_slli_epi32(v, 16), 0xAA);
}

// Q4_K / Q5_K: the super-block's first 16 bytes (d, dmin, the 12 packed
// bytes) in, its scales and mins out as bytes (scales 0-7, mins 0-7):
// kquant_unpack_scales's masks and shifts on the three words side by side.
ARCH_KQ_AVX2_INLINE __m128i kq_unpack_scales(__m128i head) {
  const __m128i u01 = _mm_shuffle_epi32(head, _MM_SHUFFLE(2, 1, 2, 1));  // u0, u1, u0, u1
  const __m128i u22 = _mm_shuffle_epi32(head, _MM_SHUFFLE(3, 3, 3, 3));  // u2 everywhere
  const __m128i first = _mm_and_si128(u01, _mm_set1_epi32(0x3F3F3F3F));  // scales 0-3, mins 0-3
  const __m128i last = _mm_or_si128(_mm_and_si128(_mm_srlv_epi32(u22, _mm_setr_epi32(0, 4, 0, 4)), _mm_set1_epi32(0x0F0F0F0F)),
                                    _mm_and_si128(_mm_srli_epi32(u01, 2), _mm_set1_epi32(0x30303030)));
  return _mm_unpacklo_epi32(first, last);
}

// Q4_K / Q5_K: the eight 6-bit scales and mins of the super-block at b,
// as int32 lanes (scales with both int16 halves set).
ARCH_KQ_AVX2_INLINE void kq_scales_mins(const uint8_t* b, __m256i& scales, __m256i& mins) {
  const __m128i bytes = kq_unpack_scales(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  scales = kq_both_halves(_mm256_cvtepu8_epi32(bytes));
  mins = _mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8));
}

// Q6_K: its sixteen int8 scales as two vectors of eight (scales 8h..8h+7
// in sc[h]), both int16 halves set.
ARCH_KQ_AVX2_INLINE void kq_q6_scales(const uint8_t* b, __m256i sc[2]) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
  sc[0] = kq_both_halves(_mm256_cvtepi8_epi32(bytes));
  sc[1] = kq_both_halves(_mm256_cvtepi8_epi32(_mm_srli_si128(bytes, 8)));
}

// The scale vector for chunk j: Q4_K / Q5_K one scale for all 32 values;
// Q6_K scale 2j for its first 16 values (int32 lanes 0-3 of the pair
// sums), 2j + 1 for the rest.
ARCH_KQ_AVX2_INLINE __m256i kq_chunk_scale(__m256i scales, int j) {
  return _mm256_permutevar8x32_epi32(scales, _mm256_set1_epi32(j));
}
ARCH_KQ_AVX2_INLINE __m256i kq_q6_chunk_scale(const __m256i sc[2], int j) {
  const int at = 2 * (j % 4);
  return _mm256_permutevar8x32_epi32(sc[j / 4], _mm256_setr_epi32(at, at, at, at, at + 1, at + 1, at + 1, at + 1));
}

// The weights a fixed distance ahead of the super-block at b asked for,
// every line of a block's length: the rows of a thread's share are one
// stream, and asking 4 KiB ahead of each block keeps it coming. Whole rows
// a few ahead, asked for at each row's start, stalled on the burst of
// requests (one core, 2048 x 8192 from L3: Q4_K 15 -> 21.5 GB/s, Q6_K 17
// -> 27, as fast as the same kernels in L2).
constexpr size_t kKQuantPrefetchBytes = 4096;
template <DType WT>
ARCH_KQ_AVX2_INLINE void kq_prefetch_ahead(const uint8_t* b) {
  for (size_t line = 0; line < kq_block_bytes<WT>; line += 64)
    _mm_prefetch(reinterpret_cast<const char*>(b + kKQuantPrefetchBytes + line), _MM_HINT_T0);
}

ARCH_KQ_AVX2_INLINE float kq_f16(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return _cvtsh_ss(bits);
}

}  // namespace arch

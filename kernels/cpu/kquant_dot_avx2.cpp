// K-quant rows on AVX2 (CPUs without AVX-512 VNNI; also the prompt path
// where oneDNN has no bf16): per super-block, each of its eight 32-value
// chunks is one vpmaddubsw (unsigned q times int8 activations, pairs to
// int16) and one vpmaddwd against the chunk's scale (to int32), summed in
// int32; the super-block's d·da then scales that sum once, and the
// offsets come off through the activations' sums (kquant_dot.h). One core
// capped to AVX2, 2048 x 8192 from L3: Q4_K 18.9 GB/s, Q5_K 17.7, Q6_K
// 24.4, against Q4_0 in 16-row tiles 28.9 and in rows 17.3.
#include <immintrin.h>

#include <algorithm>

#include "engine/core/kquant.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/kquant_chunks_avx2.h"
#include "kernels/cpu/kquant_dot.h"

namespace arch {

namespace {

constexpr int64_t S = kSuperBlock;

#define ARCH_KQ_AVX2 __attribute__((target("avx2,fma,f16c")))

ARCH_KQ_AVX2_INLINE float reduce(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Weight rows [n0, n1) against MR rows of activations from m0.
template <int MR, DType WT>
ARCH_KQ_AVX2 void rows_avx2(const KQuantActs& a, int64_t m0, const uint8_t* w, int64_t n0, int64_t n1, float* y,
                            int64_t ldy) {
  const int64_t K = a.K, blocks = K / S;
  constexpr size_t block_bytes = kq_block_bytes<WT>;
  const size_t row_bytes = size_t(blocks) * block_bytes;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w + size_t(n) * row_bytes;
    __m256 acc[MR];
    for (int m = 0; m < MR; ++m) acc[m] = _mm256_setzero_ps();
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const uint8_t* b = row + size_t(blk) * block_bytes;
      kq_prefetch_ahead<WT>(b);
      __m256i scales, mins, sc[2];
      if constexpr (WT == DType::Q6_K) kq_q6_scales(b, sc);
      else kq_scales_mins(b, scales, mins);
      __m256i dot[MR];
      for (int m = 0; m < MR; ++m) dot[m] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m256i q = kquant_chunk<WT>(b, j);
        const __m256i s = WT == DType::Q6_K ? kq_q6_chunk_scale(sc, j) : kq_chunk_scale(scales, j);
        for (int m = 0; m < MR; ++m) {
          const int8_t* x = a.q.data() + (m0 + m) * K + blk * S + 32 * j;
          const __m256i pairs = _mm256_maddubs_epi16(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x)));
          dot[m] = _mm256_add_epi32(dot[m], _mm256_madd_epi16(pairs, s));
        }
      }
      if constexpr (WT == DType::Q6_K) {  // q - 32: -32 · sc_k · Σ a over group k
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192)));
        const __m256i minus32 = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc16, 5));
        for (int m = 0; m < MR; ++m) {
          const int16_t* sums = a.sum16.data() + ((m0 + m) * K + blk * S) / 16;
          dot[m] = _mm256_add_epi32(
              dot[m], _mm256_madd_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums)), minus32));
        }
      }
      const float d = kq_f16(b + (WT == DType::Q6_K ? 208 : 0));
      for (int m = 0; m < MR; ++m)
        acc[m] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[m]), _mm256_set1_ps(d * a.d[size_t((m0 + m) * blocks + blk)]),
                                 acc[m]);
      if constexpr (WT != DType::Q6_K) {  // the mins: dmin · m_j · da · Σ a over sub-block j
        const __m256 m_f = _mm256_mul_ps(_mm256_cvtepi32_ps(mins), _mm256_set1_ps(kq_f16(b + 2)));
        for (int m = 0; m < MR; ++m)
          acc[m] = _mm256_fnmadd_ps(m_f, _mm256_loadu_ps(a.dsum32.data() + ((m0 + m) * K + blk * S) / 32), acc[m]);
      }
    }
    for (int m = 0; m < MR; ++m) y[(m0 + m) * ldy + n] = reduce(acc[m]);
  }
}

template <DType WT>
void gemv_avx2(const KQuantActs& a, const uint8_t* w, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  for (int64_t m = 0; m < a.M; m += 4)
    with_rows(std::min<int64_t>(4, a.M - m), [&](auto MR) { rows_avx2<MR, WT>(a, m, w, n0, n1, y, ldy); });
}

}  // namespace

void kquant_gemv_avx2(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  if (wt == DType::Q4_K) gemv_avx2<DType::Q4_K>(a, w, n0, n1, y, ldy);
  else if (wt == DType::Q5_K) gemv_avx2<DType::Q5_K>(a, w, n0, n1, y, ldy);
  else gemv_avx2<DType::Q6_K>(a, w, n0, n1, y, ldy);
}

}  // namespace arch

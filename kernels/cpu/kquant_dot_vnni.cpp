// K-quant rows on AVX-512 VNNI, the decode path: a super-block is four
// 64-byte vectors of unsigned q, each one vpmaddubsw against 64 int8
// activations (pairs to int16) and one vpdpwssd that multiplies those by
// their sub-block's scale and adds them to the super-block's int32 sums;
// d·da then scales the sums once per super-block (kquant_dot.h).
//
// Q4_K / Q5_K: a 64-byte load of q nibbles holds sub-blocks 0 and 2 in its
// low nibbles and 1 and 3 in its high ones; the activations come in that
// order (KQuantActs::paired), so no weight byte is moved. Q6_K's 64 bytes
// of low nibbles are 64 values in order already, its bit pairs a shift
// away.
//
// What bounds it is its count of 512-bit operations (ports 0 and 5 alone
// take them): about 40 a super-block for one activation row, two thirds
// of them the super-block's own (nibbles, scales, factors), the rest per
// row. One core (Xeon, AVX-512 VNNI), in L2 (1024 x 1024) and from L3
// (2048 x 8192): Q4_K 19.8 / 22.8 GB/s, Q5_K 17.9 / 21.0, Q6_K 26.7 /
// 27.8, against Q4_0 in 16-row tiles 45.6 / 29.0 and in rows 16.6 / 16.1.
// Both cores streaming 128256 x 2048 from memory: Q4_K 27-31 GB/s, Q5_K
// 24-30, Q6_K 29-31, as Q4_0 tiles 26-30, at a read probe of 28-30.
#include <immintrin.h>

// GCC 12 sees the reductions' own undefined start values
// (_mm512_reduce_add_ps) as uninitialised once inlined: no such read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>

#include "engine/core/kquant.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/kquant_chunks_avx2.h"
#include "kernels/cpu/kquant_dot.h"

namespace arch {

namespace {

constexpr int64_t S = kSuperBlock;

#define ARCH_KQ_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))
#define ARCH_KQ_VNNI_INLINE \
  inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

// Small integers in int32 lanes with both int16 halves the value: what
// vpdpwssd multiplies a lane's pair of sums by.
ARCH_KQ_VNNI_INLINE __m512i both_halves(__m512i v) {
  return _mm512_mask_blend_epi16(0xAAAAAAAA, v, _mm512_slli_epi32(v, 16));
}

// One super-block ready for the activations: its q as four vectors, each
// vector's scales (int32 lane t: the scale of its values 4t..4t+3), and
// its factors.
struct Block {
  __m512i q[4], s[4];
  float d;
  __m256 mins;      // Q4_K / Q5_K: dmin · m_j
  __m512i minus32;  // Q6_K: -32 · sc_k as int16 in the low 256 bits
};

template <DType WT>
ARCH_KQ_VNNI_INLINE void decode(const uint8_t* b, Block& out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F);
  if constexpr (WT == DType::Q6_K) {
    for (int half = 0; half < 2; ++half) {
      // Values 128h..128h+63 in the low nibbles, the next 64 in the high
      // ones; their bit pairs are qh bits 0-1 and 2-3 (low), 4-5 and 6-7
      // (high) of the half's 32 bytes, each half of the vector its own.
      const __m512i ql = _mm512_loadu_si512(b + 64 * half);
      const __m512i qh =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 128 + 32 * half)));
      const __m512i bits45 = _mm512_set1_epi8(0x30);
      const __m512i lo_high = _mm512_sllv_epi64(qh, _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2));
      const __m512i hi_high = _mm512_srlv_epi64(qh, _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2));
      // A | (B & C): the nibbles, and the bit pairs where C has bits 4-5.
      out.q[2 * half] = _mm512_ternarylogic_epi32(_mm512_and_si512(ql, low4), lo_high, bits45, 0xF8);
      out.q[2 * half + 1] =
          _mm512_ternarylogic_epi32(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4), hi_high, bits45, 0xF8);
    }
    const __m128i sc = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + 192));
    const __m512i scales = both_halves(_mm512_cvtepi8_epi32(sc));
    for (int v = 0; v < 4; ++v) {  // 16 values a scale: lanes 4k..4k+3 take scale 4v + k
      const int k = 4 * v;
      out.s[v] = _mm512_permutexvar_epi32(_mm512_setr_epi32(k, k, k, k, k + 1, k + 1, k + 1, k + 1, k + 2, k + 2, k + 2,
                                                             k + 2, k + 3, k + 3, k + 3, k + 3),
                                          scales);
    }
    out.minus32 = _mm512_zextsi256_si512(
        _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(_mm256_cvtepi8_epi16(sc), 5)));
    out.d = kq_f16(b + 208);
    return;
  }
  const uint8_t* qs = b + (WT == DType::Q5_K ? 48 : 16);
  for (int i = 0; i < 2; ++i) {
    const __m512i v = _mm512_loadu_si512(qs + 64 * i);
    out.q[2 * i] = _mm512_and_si512(v, low4);                             // sub-blocks 4i, 4i + 2
    out.q[2 * i + 1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);  // 4i + 1, 4i + 3
  }
  if constexpr (WT == DType::Q5_K) {  // the fifth bit of sub-block j is bit j of qh
    const __m512i qh = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 16)));
    const __m512i sixteen = _mm512_set1_epi8(16);
    for (int v = 0; v < 4; ++v) {
      const int j = 4 * (v / 2) + v % 2;  // the vector's sub-blocks: j in its low half, j + 2 in its high
      const __m512i bit = _mm512_inserti64x4(_mm512_set1_epi8(char(1 << j)), _mm256_set1_epi8(char(1 << (j + 2))), 1);
      out.q[v] = _mm512_mask_add_epi8(out.q[v], _mm512_test_epi8_mask(qh, bit), out.q[v], sixteen);
    }
  }
  const __m128i head = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
  const __m128i bytes = kq_unpack_scales(head);  // scales 0-7, mins 0-7
  // Each vector's int16 lanes take scale j (its low half) or j + 2: one
  // byte shuffle from the scales in every 128 bits, its high bytes zeroed
  // (index bit 7).
  const __m512i every = _mm512_broadcast_i32x4(bytes);
  for (int v = 0; v < 4; ++v) {
    const int j = 4 * (v / 2) + v % 2;
    const __m512i pick = _mm512_inserti64x4(_mm512_set1_epi16(short(0x8000 | j)),
                                            _mm256_set1_epi16(short(0x8000 | (j + 2))), 1);
    out.s[v] = _mm512_shuffle_epi8(every, pick);
  }
  const __m128 factors = _mm_cvtph_ps(head);  // d, dmin
  out.d = _mm_cvtss_f32(factors);
  out.mins = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8))),
                           _mm256_broadcastss_ps(_mm_movehdup_ps(factors)));
}

ARCH_KQ_VNNI_INLINE float reduce(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

// Weight rows [n0, n1) against MR rows of activations from m0.
template <int MR, DType WT>
ARCH_KQ_VNNI void rows_vnni(const KQuantActs& a, int64_t m0, const uint8_t* w, int64_t n0, int64_t n1, float* y,
                            int64_t ldy) {
  constexpr bool kMins = WT != DType::Q6_K;
  const int64_t K = a.K, blocks = K / S;
  constexpr size_t block_bytes = kq_block_bytes<WT>;
  const size_t row_bytes = size_t(blocks) * block_bytes;
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w + size_t(n) * row_bytes;
    // The mins in accumulators of their own: one FMA a super-block on each
    // chain, not two on one.
    __m512 acc[MR];
    __m256 mins[MR];
    for (int m = 0; m < MR; ++m) acc[m] = _mm512_setzero_ps(), mins[m] = _mm256_setzero_ps();
    const int8_t* x = a.q.data() + m0 * K;
    const float* da = a.d.data() + m0 * blocks;
    const int16_t* sum16 = a.sum16.data() + m0 * K / 16;
    const float* dsum32 = a.dsum32.data() + m0 * K / 32;
    for (int64_t blk = 0; blk < blocks; ++blk, x += S, ++da, sum16 += 16, dsum32 += 8) {
      const uint8_t* b = row + size_t(blk) * block_bytes;
      kq_prefetch_ahead<WT>(b);
      Block bk;
      decode<WT>(b, bk);
      for (int m = 0; m < MR; ++m) {
        const int8_t* xm = x + m * K;
        // Two chains of two: consecutive vpdpwssd need not wait on each
        // other, and one add joins them (the loop is bound by its count of
        // 512-bit operations, which ports 0 and 5 alone take).
        __m512i even = _mm512_setzero_si512(), odd = _mm512_setzero_si512();
        for (int v = 0; v < 4; v += 2) {
          even = _mm512_dpwssd_epi32(even, _mm512_maddubs_epi16(bk.q[v], _mm512_loadu_si512(xm + 64 * v)), bk.s[v]);
          odd = _mm512_dpwssd_epi32(odd, _mm512_maddubs_epi16(bk.q[v + 1], _mm512_loadu_si512(xm + 64 * v + 64)),
                                    bk.s[v + 1]);
        }
        if constexpr (WT == DType::Q6_K)  // q - 32: -32 · sc_k · Σ a over group k
          even = _mm512_dpwssd_epi32(
              even, _mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sum16 + m * K / 16))),
              bk.minus32);
        const __m512i sum = _mm512_add_epi32(even, odd);
        acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(bk.d * da[m * blocks]), acc[m]);
        if constexpr (kMins)  // dmin · m_j · da · Σ a over sub-block j
          mins[m] = _mm256_fmadd_ps(bk.mins, _mm256_loadu_ps(dsum32 + m * K / 32), mins[m]);
      }
    }
    for (int m = 0; m < MR; ++m)
      y[(m0 + m) * ldy + n] = _mm512_reduce_add_ps(acc[m]) - (kMins ? reduce(mins[m]) : 0.0f);
  }
}

template <DType WT>
void gemv_vnni(const KQuantActs& a, const uint8_t* w, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  for (int64_t m = 0; m < a.M; m += 4)
    with_rows(std::min<int64_t>(4, a.M - m), [&](auto MR) { rows_vnni<MR, WT>(a, m, w, n0, n1, y, ldy); });
}

}  // namespace

void kquant_gemv_vnni(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy) {
  if (wt == DType::Q4_K) gemv_vnni<DType::Q4_K>(a, w, n0, n1, y, ldy);
  else if (wt == DType::Q5_K) gemv_vnni<DType::Q5_K>(a, w, n0, n1, y, ldy);
  else gemv_vnni<DType::Q6_K>(a, w, n0, n1, y, ldy);
}

}  // namespace arch

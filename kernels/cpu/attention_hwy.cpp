// The cpu backend's attention: an online-softmax (flash-style) kernel.
// Each task takes one kv head's group of query heads (or a slice of it) and
// a block of query rows, and streams the keys it can see in blocks: scores
// q.k * scale (softcapped), a running max and sum per query, and the output
// accumulated from V rescaled as the max grows. K and V are read in place
// (GQA: query head h reads kv head h / (H / KH), shared by the group's
// queries in one task, never copied; for prompts the keys are also
// transposed once per call, block by block, so scores come out of a small
// matrix product). A bias [H, S, T] (T5) is added to the visible scores
// after scale and softcap. Masking is the reference's, as a range of keys per
// query: causal j <= i; with a window, i - window < j (causal) or
// |i - j| < window (not causal), i the query's absolute position T - S + r.
// A query seeing no key gives zeros, as in the reference. Highway for the
// products, exp / tanh and the V sums; OpenMP over tasks.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <omp.h>

#include "engine/core/dtype.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/kv_cache.h"

// What a task reads, passed across the dispatch boundary. Guarded:
// foreach_target includes this file once per target.
#ifndef ARCH_KERNELS_CPU_ATTENTION_PARAMS
#define ARCH_KERNELS_CPU_ATTENTION_PARAMS
namespace arch::cpu_attention {
struct Params {
  const float* q;  // [S, H, D]
  const void* k;   // [T, KH, D], F32, or F16 if kv_f16
  const void* v;   // [T, KH, Vw], the same type: each row's first Dv are the values
  bool kv_f16 = false;  // the KV cache's rows kept as F16 (--kv-f16)
  float* out;      // [S, H, Dv]
  int64_t S, H, D, T, KH, Dv;
  int64_t Vw = 0;  // v's row width: Dv, or more where attention's value_dim reads the first Dv
  int64_t past;    // absolute position of query row 0: T - S
  int64_t window;  // 0: none
  bool causal;
  float scale, softcap;  // softcap 0: none
  const float* bias = nullptr;  // [H, S, T], added after scale and softcap (T5); null: none
};
// Keys per block: its scores stay in L1, its K and V rows in L2.
constexpr int64_t kKeyBlock = 128;
// The visible keys of the query at absolute position i: [lo, hi).
inline void key_range(const Params& p, int64_t i, int64_t* lo, int64_t* hi) {
  *lo = p.window > 0 ? std::max<int64_t>(0, i - p.window + 1) : 0;
  if (p.causal)
    *hi = std::min(p.T, i + 1);
  else
    *hi = p.window > 0 ? std::min(p.T, i + p.window) : p.T;
}
}  // namespace arch::cpu_attention
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/attention_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "kernels/cpu/dot-inl.h"
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using cpu_attention::kKeyBlock;
using cpu_attention::Params;

// Queries are taken up to 8 at a time (kGroup): their scores for a block
// of keys are small matrix products against the block's keys transposed
// (lanes are keys: no sums across lanes), 4 queries each, or, for a few
// queries, dot products with the keys as stored; their outputs gather
// p_j v_j with each V vector loaded once for the group. Eight, so that a
// decode step's kv head with 5-8 query heads reads its V rows once, not
// twice.
constexpr int64_t kGroup = 8;

// Floats of scratch a task of M queries needs: per query its output
// accumulator, running max and sum; scores [M + kGroup, kKeyBlock] (a row
// per query, and the rows a last group of 4-query products pads to); a
// query of zeros and an output for the queries a last group lacks; a key
// block's K and V rows widened from an F16 cache.
size_t ScratchFloats(int64_t M, int64_t D, int64_t Dv) {
  return size_t(M * (Dv + 2) + (M + kGroup) * kKeyBlock + D + Dv + kKeyBlock * (D + Dv));
}

// A value of the cache as float: F32 as is, F16 widened.
HWY_INLINE float KVAt(const float* p, int64_t i) { return p[i]; }
HWY_INLINE float KVAt(const hwy::float16_t* p, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, p + i, 2);
  return f16_to_f32(bits);
}

// n rows of `width` F16 values, `stride` apart, widened into out [n, width].
void WidenRows(const hwy::float16_t* HWY_RESTRICT rows, int64_t stride, int64_t n, int64_t width,
               float* HWY_RESTRICT out) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<hwy::float16_t, decltype(d)> d16;
  const int64_t N = int64_t(hn::Lanes(d));
  for (int64_t j = 0; j < n; ++j) {
    const hwy::float16_t* row = rows + j * stride;
    float* o = out + j * width;
    int64_t e = 0;
    for (; e + N <= width; e += N) hn::StoreU(hn::PromoteTo(d, hn::LoadU(d16, row + e)), d, o + e);
    for (; e < width; ++e) o[e] = KVAt(row, e);
  }
}

// Key block `block` of kv head g (keys from block * kKeyBlock) transposed
// into out [D, kKeyBlock], zero past the last key. Stores in order: strided
// stores cost far more than strided loads.
template <typename KV>
void TransposeKeysT(const Params& p, int64_t g, int64_t block, float* HWY_RESTRICT out) {
  const int64_t kb = block * kKeyBlock, n = std::min(p.T - kb, kKeyBlock), kstride = p.KH * p.D;
  const KV* k = static_cast<const KV*>(p.k) + (kb * p.KH + g) * p.D;
  for (int64_t e = 0; e < p.D; ++e) {
    float* row = out + e * kKeyBlock;
    for (int64_t j = 0; j < n; ++j) row[j] = KVAt(k, j * kstride + e);
    std::fill(row + n, row + kKeyBlock, 0.0f);
  }
}

void TransposeKeys(const Params& p, int64_t g, int64_t block, float* HWY_RESTRICT out) {
  if (p.kv_f16) TransposeKeysT<hwy::float16_t>(p, g, block, out);
  else TransposeKeysT<float>(p, g, block, out);
}

#if HWY_TARGET != HWY_SCALAR
// q . k_j for the 4 keys k, k + kstride, k + 2 kstride, k + 3 kstride, D a
// multiple of the vector length (at least 4 lanes), left as each 128-bit
// block's share [s0 s1 s2 s3]: the four sums across lanes are one
// reduction, lanes paired within each block (two interleave steps); a dot
// product on its own costs a full reduction each.
// DN, where not 0, is D / N known when compiling (D 64 or 128 on AVX-512):
// the loop unrolls, and Dot16's four calls interleave their 16 chains of
// fmas instead of running four loops of 4 chains each
// (BM_CrossAttentionLayers, two threads: 74.8-94.4 -> 70.5-88.9 us).
template <int DN = 0>
HWY_INLINE hn::Vec<hn::ScalableTag<float>> Dot4Blocks(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k,
                                                      int64_t kstride, int64_t D) {
  const hn::ScalableTag<float> d;
  const hn::Repartition<double, decltype(d)> d64;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t end = DN ? DN * N : D;
  auto s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
#pragma GCC unroll 8
  for (int64_t e = 0; e < end; e += N) {
    const auto x = hn::LoadU(d, q + e);
    s0 = hn::MulAdd(x, hn::LoadU(d, k + e), s0);
    s1 = hn::MulAdd(x, hn::LoadU(d, k + kstride + e), s1);
    s2 = hn::MulAdd(x, hn::LoadU(d, k + 2 * kstride + e), s2);
    s3 = hn::MulAdd(x, hn::LoadU(d, k + 3 * kstride + e), s3);
  }
  // Per block: [s0 s1 s0 s1] partial sums, then [s0 s1 s2 s3].
  const auto a = hn::Add(hn::InterleaveLower(d, s0, s1), hn::InterleaveUpper(d, s0, s1));
  const auto b = hn::Add(hn::InterleaveLower(d, s2, s3), hn::InterleaveUpper(d, s2, s3));
  const auto a64 = hn::BitCast(d64, a), b64 = hn::BitCast(d64, b);
  return hn::Add(hn::BitCast(d, hn::InterleaveLower(d64, a64, b64)), hn::BitCast(d, hn::InterleaveUpper(d64, a64, b64)));
}
#endif

// q . k_j for the 4 keys k, k + kstride, k + 2 kstride, k + 3 kstride into
// out[0..3] (Dot4Blocks, then the blocks added).
HWY_INLINE void Dot4(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k, int64_t kstride, int64_t D,
                     float* HWY_RESTRICT out) {
#if HWY_TARGET == HWY_SCALAR  // one lane: nothing to pair
  for (int r = 0; r < 4; ++r) out[r] = Dot(q, k + r * kstride, D);
#else
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto c = Dot4Blocks(q, k, kstride, D);
  HWY_ALIGN float lanes[hn::MaxLanes(d)];
  hn::Store(c, d, lanes);
  for (int r = 0; r < 4; ++r) {
    float t = 0;
    for (int64_t blk = 0; blk < N; blk += 4) t += lanes[blk + r];
    out[r] = t;
  }
#endif
}

#if HWY_TARGET <= HWY_AVX3
// 16 keys into out[0..15] on AVX-512: four Dot4Blocks, their four blocks
// summed by two rounds of block shuffles into one vector of the 16 scores
// in order, where Dot4 ends lane by lane (BM_Attention/1/128, one thread:
// 10.1 -> 9.4-9.8 us).
template <int DN>
HWY_INLINE void Dot16(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k, int64_t kstride, int64_t D,
                      float* HWY_RESTRICT out) {
  const __m512 c0 = Dot4Blocks<DN>(q, k, kstride, D).raw, c1 = Dot4Blocks<DN>(q, k + 4 * kstride, kstride, D).raw;
  const __m512 c2 = Dot4Blocks<DN>(q, k + 8 * kstride, kstride, D).raw;
  const __m512 c3 = Dot4Blocks<DN>(q, k + 12 * kstride, kstride, D).raw;
  // [x.b0 + x.b2, x.b1 + x.b3, y.b0 + y.b2, y.b1 + y.b3] for (c0, c1) and (c2, c3),
  const __m512 u = _mm512_add_ps(_mm512_shuffle_f32x4(c0, c1, 0x44), _mm512_shuffle_f32x4(c0, c1, 0xEE));
  const __m512 v = _mm512_add_ps(_mm512_shuffle_f32x4(c2, c3, 0x44), _mm512_shuffle_f32x4(c2, c3, 0xEE));
  // then each pair of those added: c0's 4 sums, c1's, c2's, c3's.
  _mm512_storeu_ps(out, _mm512_add_ps(_mm512_shuffle_f32x4(u, v, 0x88), _mm512_shuffle_f32x4(u, v, 0xDD)));
}
#endif

// Scores s[i, j] = q_i . k_j of 4 queries for keys [j0, j1) of the block (j0 a multiple
// of the vector length, j1 padded up to one: the transposed block is
// zero-padded), kt the block transposed [D, kKeyBlock].
HWY_INLINE void GroupScores4(const float* const* q, const float* HWY_RESTRICT kt, int64_t D, int64_t j0,
                             int64_t j1, float* HWY_RESTRICT sc) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t j = j0;
  for (; j + 2 * N <= j1; j += 2 * N) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    auto b0 = hn::Zero(d), b1 = hn::Zero(d), b2 = hn::Zero(d), b3 = hn::Zero(d);
    for (int64_t e = 0; e < D; ++e) {
      const auto k0 = hn::LoadU(d, kt + e * kKeyBlock + j), k1 = hn::LoadU(d, kt + e * kKeyBlock + j + N);
      const auto x0 = hn::Set(d, q[0][e]), x1 = hn::Set(d, q[1][e]), x2 = hn::Set(d, q[2][e]), x3 = hn::Set(d, q[3][e]);
      a0 = hn::MulAdd(x0, k0, a0), b0 = hn::MulAdd(x0, k1, b0);
      a1 = hn::MulAdd(x1, k0, a1), b1 = hn::MulAdd(x1, k1, b1);
      a2 = hn::MulAdd(x2, k0, a2), b2 = hn::MulAdd(x2, k1, b2);
      a3 = hn::MulAdd(x3, k0, a3), b3 = hn::MulAdd(x3, k1, b3);
    }
    hn::StoreU(a0, d, sc + j), hn::StoreU(b0, d, sc + j + N);
    hn::StoreU(a1, d, sc + kKeyBlock + j), hn::StoreU(b1, d, sc + kKeyBlock + j + N);
    hn::StoreU(a2, d, sc + 2 * kKeyBlock + j), hn::StoreU(b2, d, sc + 2 * kKeyBlock + j + N);
    hn::StoreU(a3, d, sc + 3 * kKeyBlock + j), hn::StoreU(b3, d, sc + 3 * kKeyBlock + j + N);
  }
  for (; j < j1; j += N) {
    auto a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
    for (int64_t e = 0; e < D; ++e) {
      const auto k0 = hn::LoadU(d, kt + e * kKeyBlock + j);
      a0 = hn::MulAdd(hn::Set(d, q[0][e]), k0, a0);
      a1 = hn::MulAdd(hn::Set(d, q[1][e]), k0, a1);
      a2 = hn::MulAdd(hn::Set(d, q[2][e]), k0, a2);
      a3 = hn::MulAdd(hn::Set(d, q[3][e]), k0, a3);
    }
    hn::StoreU(a0, d, sc + j), hn::StoreU(a1, d, sc + kKeyBlock + j);
    hn::StoreU(a2, d, sc + 2 * kKeyBlock + j), hn::StoreU(a3, d, sc + 3 * kKeyBlock + j);
  }
}

// The same for a group's first `count` queries, 4 at a time (the rest of
// the group is missing: nothing reads their scores).
HWY_INLINE void GroupScores(const float* const (&q)[kGroup], int64_t count, const float* HWY_RESTRICT kt, int64_t D,
                            int64_t j0, int64_t j1, float* HWY_RESTRICT sc) {
  for (int64_t i = 0; i < count; i += 4) GroupScores4(q + i, kt, D, j0, j1, sc + i * kKeyBlock);
}

// o_i = o_i * corr_i + sum_j p[i, j] v_j over keys [j0, j1) for the
// group's first G queries' VC vectors of output values from e: each V
// vector loaded once for the G queries.
template <int G, int VC>
HWY_INLINE void GroupValues(float* const (&o)[kGroup], const float (&corr)[kGroup], const float* HWY_RESTRICT p,
                            const float* HWY_RESTRICT v, int64_t vstride, int64_t j0, int64_t j1, int64_t e) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  using V = hn::Vec<decltype(d)>;
  V acc[G][VC];
  #pragma GCC unroll 16
  for (int i = 0; i < G; ++i)
    #pragma GCC unroll 16
    for (int c = 0; c < VC; ++c) acc[i][c] = hn::Mul(hn::LoadU(d, o[i] + e + c * N), hn::Set(d, corr[i]));
  for (int64_t j = j0; j < j1; ++j) {
    const float* vj = v + j * vstride + e;
    V vv[VC];
    #pragma GCC unroll 16
    for (int c = 0; c < VC; ++c) vv[c] = hn::LoadU(d, vj + c * N);
    #pragma GCC unroll 16
    for (int i = 0; i < G; ++i) {
      const auto w = hn::Set(d, p[i * kKeyBlock + j]);
      #pragma GCC unroll 16
      for (int c = 0; c < VC; ++c) acc[i][c] = hn::MulAdd(w, vv[c], acc[i][c]);
    }
  }
  #pragma GCC unroll 16
  for (int i = 0; i < G; ++i)
    #pragma GCC unroll 16
    for (int c = 0; c < VC; ++c) hn::StoreU(acc[i][c], d, o[i] + e + c * N);
}

// GroupValues over the whole vectors of Dv from e = 0, 4 at a time (2 for
// more than 4 queries: G x 4 sums would not fit the registers) then one;
// e is left at the first value past them.
template <int G>
HWY_INLINE void GroupValuesOf(float* const (&o)[kGroup], const float (&corr)[kGroup], const float* HWY_RESTRICT p,
                              const float* HWY_RESTRICT v, int64_t vstride, int64_t j0, int64_t j1, int64_t Dv,
                              int64_t& e) {
  const int64_t N = int64_t(hn::Lanes(hn::ScalableTag<float>()));
  constexpr int VC = G > 4 ? 2 : 4;
  for (; e + VC * N <= Dv; e += VC * N) GroupValues<G, VC>(o, corr, p, v, vstride, j0, j1, e);
  for (; e + N <= Dv; e += N) GroupValues<G, 1>(o, corr, p, v, vstride, j0, j1, e);
}

// 16 keys' scores for one query into out[0..15] (k, k + kstride, ...):
// Dot16 on AVX-512, four Dot4 elsewhere.
HWY_INLINE void Scores16(const float* HWY_RESTRICT q, const float* HWY_RESTRICT k, int64_t kstride, int64_t D,
                         float* HWY_RESTRICT out) {
#if HWY_TARGET <= HWY_AVX3
  if (D == 64) Dot16<4>(q, k, kstride, D, out);
  else if (D == 128) Dot16<8>(q, k, kstride, D, out);
  else Dot16<0>(q, k, kstride, D, out);
#else
  for (int c = 0; c < 16; c += 4) Dot4(q, k + c * kstride, kstride, D, out + c);
#endif
}

// Up to kGroup queries of one kv head against one key block: where they
// read and write, and which keys of the block (from its first) they see.
// Query i's scores are at sc + (m0 + i) * kKeyBlock.
struct QueryGroup {
  int64_t m0, count;  // the task's queries [m0, m0 + count); the rest of the kGroup are missing
  const float* q[kGroup];
  float* o[kGroup];  // accumulators
  int64_t lo[kGroup], hi[kGroup];
  const float* bias_row[kGroup];
  int64_t glo, ghi;  // the keys any of them sees
  const float *k, *v;  // the kv head's rows of the block
  int64_t kstride, vstride;
  float corr[kGroup];  // exp(old max - new max), after BlockSoftmax
  // Dot products with the keys as stored (PrepareDots): query i's keys
  // [a[i], b[i]), the queries up to the last one seeing any, and the
  // keys all of those see.
  int64_t a[kGroup], b[kGroup], both_lo, both_hi;
  int active;
};

// The group's scores read as stored: each query's keys clamped to the
// group's vector-aligned range, the scores outside them zero, and the
// range every active query sees.
HWY_INLINE void PrepareDots(QueryGroup& g, float* HWY_RESTRICT sc, bool by_four) {
  const int64_t N = int64_t(hn::Lanes(hn::ScalableTag<float>()));
  const int64_t j0 = g.glo / N * N, j1 = (g.ghi + N - 1) / N * N;
  g.both_lo = j0, g.both_hi = j1, g.active = 0;
  for (int i = 0; i < g.count; ++i) {
    float* s = sc + (g.m0 + i) * kKeyBlock;
    g.a[i] = std::clamp(g.lo[i], j0, j1), g.b[i] = std::clamp(g.hi[i], g.a[i], j1);
    std::fill(s + j0, s + g.a[i], 0.0f);
    std::fill(s + g.b[i], s + j1, 0.0f);
    if (g.a[i] < g.b[i])
      g.active = i + 1, g.both_lo = std::max(g.both_lo, g.a[i]), g.both_hi = std::min(g.both_hi, g.b[i]);
  }
  if (!by_four) g.both_hi = g.both_lo;
}

// The rest of the group's scores read as stored, past the keys [done_lo,
// done_hi) taken 16 at a time: 4 then 1 at a time; only visible keys are
// read (past them may lie beyond the cache's rows).
HWY_INLINE void DotsOutside(const QueryGroup& g, float* HWY_RESTRICT sc, int64_t D, bool by_four, int64_t done_lo,
                            int64_t done_hi) {
  auto dots = [&](int i, int64_t from, int64_t to) {
    float* s = sc + (g.m0 + i) * kKeyBlock;
    int64_t j = from;
    if (by_four)
      for (; j + 4 <= to; j += 4) Dot4(g.q[i], g.k + j * g.kstride, g.kstride, D, s + j);
    for (; j < to; ++j) s[j] = Dot(g.q[i], g.k + j * g.kstride, D);
  };
  for (int i = 0; i < g.active; ++i) {
    if (g.a[i] >= g.b[i]) continue;
    if (done_hi > done_lo) {
      dots(i, g.a[i], done_lo);
      dots(i, done_hi, g.b[i]);
    } else {
      dots(i, g.a[i], g.b[i]);
    }
  }
}

// The groups' scores read as stored: the keys all their active queries
// see, 16 at a time for every group in turn (one group: its 16 K rows from
// L1 after its first query; several kv heads: each key's rows of all the
// heads together, in order), then each query's own ends.
HWY_INLINE void ScoresAsStored(std::span<QueryGroup> groups, int64_t n, float* HWY_RESTRICT sc, int64_t D,
                               bool by_four) {
  int64_t lo16 = 0, hi16 = n;
  for (QueryGroup& g : groups) {
    PrepareDots(g, sc, by_four);
    lo16 = std::max(lo16, g.both_lo), hi16 = std::min(hi16, g.both_hi);
  }
  const int64_t end16 = hi16 - lo16 >= 16 ? lo16 + (hi16 - lo16) / 16 * 16 : lo16;  // none without by_four
  for (int64_t j = lo16; j < end16; j += 16)
    for (const QueryGroup& g : groups)
      for (int i = 0; i < g.active; ++i)
        Scores16(g.q[i], g.k + j * g.kstride, g.kstride, D, sc + (g.m0 + i) * kKeyBlock + j);
  for (const QueryGroup& g : groups) DotsOutside(g, sc, D, by_four, lo16, end16);
}

// Per query of the group: scale, softcap, bias, mask; the running max
// grows to cover the block and what was summed so far is rescaled by
// corr = exp(old max - new max); p_j = exp(s_j - max) in place of the
// scores, summed.
HWY_INLINE void BlockSoftmax(const Params& p, QueryGroup& g, float* HWY_RESTRICT sc, float* HWY_RESTRICT run_max,
                             float* HWY_RESTRICT run_sum) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t j0 = g.glo / N * N, j1 = (g.ghi + N - 1) / N * N;
  const auto scale = hn::Set(d, p.scale), cap = hn::Set(d, p.softcap), neg_inf = hn::Set(d, -INFINITY);
  for (int i = 0; i < g.count; ++i) {
    float* s = sc + (g.m0 + i) * kKeyBlock;
    g.corr[i] = 1.0f;
    if (g.lo[i] >= g.hi[i]) {  // sees nothing here: adds nothing
      std::fill(s + j0, s + j1, 0.0f);
      continue;
    }
    auto vmax = neg_inf;
    for (int64_t j = j0; j < j1; j += N) {
      auto x = hn::Mul(hn::LoadU(d, s + j), scale);
      if (p.softcap > 0.0f) x = hn::Mul(hn::Tanh(d, hn::Div(x, cap)), cap);
      hn::StoreU(x, d, s + j);
    }
    if (g.bias_row[i])
      for (int64_t j = g.lo[i]; j < g.hi[i]; ++j) s[j] += g.bias_row[i][j];
    for (int64_t j = j0; j < g.lo[i]; ++j) s[j] = -INFINITY;
    for (int64_t j = g.hi[i]; j < j1; ++j) s[j] = -INFINITY;
    for (int64_t j = j0; j < j1; j += N) vmax = hn::Max(vmax, hn::LoadU(d, s + j));
    const int64_t m = g.m0 + i;
    const float new_max = std::max(run_max[m], hn::GetLane(hn::MaxOfLanes(d, vmax)));
    g.corr[i] = run_max[m] == -INFINITY ? 0.0f : std::exp(run_max[m] - new_max);
    run_max[m] = new_max;
    const auto vnew = hn::Set(d, new_max);
    auto vsum = hn::Zero(d);
    for (int64_t j = j0; j < j1; j += N) {
      const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, s + j), vnew));
      hn::StoreU(e, d, s + j);
      vsum = hn::Add(vsum, e);
    }
    run_sum[m] = run_sum[m] * g.corr[i] + hn::GetLane(hn::SumOfLanes(d, vsum));
  }
}

// o = o * corr + sum_j p_j v_j over keys [j0, j1) for the group's queries.
HWY_INLINE void GroupValuesAll(const QueryGroup& g, const float (&corr)[kGroup], const float* HWY_RESTRICT sc,
                               int64_t j0, int64_t j1, int64_t Dv) {
  const float* p = sc + g.m0 * kKeyBlock;
  int64_t e = 0;
  // As many queries as the group has (a decode step's last group of a kv
  // head's 7 or 6 query heads is short).
  switch (g.count) {
    case 1: GroupValuesOf<1>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    case 2: GroupValuesOf<2>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    case 3: GroupValuesOf<3>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    case 4: GroupValuesOf<4>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    case 5: GroupValuesOf<5>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    case 6: GroupValuesOf<6>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    case 7: GroupValuesOf<7>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
    default: GroupValuesOf<kGroup>(g.o, corr, p, g.v, g.vstride, j0, j1, Dv, e); break;
  }
  for (; e < Dv; ++e)
    for (int i = 0; i < g.count; ++i) {
      float a = g.o[i][e] * corr[i];
      for (int64_t j = j0; j < j1; ++j) a += p[i * kKeyBlock + j] * g.v[j * g.vstride + e];
      g.o[i][e] = a;
    }
}

// Query heads [h0, h0 + nh) of each of the kv heads [g0, g0 + ng) (all
// reading kv head g; with ng > 1, nh is the whole group, so the heads are
// h0 .. h0 + ng * nh) for query rows [r0, r0 + nr): out = softmax(masked
// scores) v, online over key blocks. A key block is taken for every kv
// head of the task in turn, so its rows are read from memory once.
// kt: kv head g0's key blocks transposed (TransposeKeys; block b at
// kt + (b - kt_first) * D * kKeyBlock; ng 1), or null to take dot products
// with the keys as stored (a few queries: not worth transposing).
// Only keys in [key_lo, key_hi) are taken. With `partial`, the task's
// share is left unnormalised for CombineSplits: per (row r, head h), at
// partial + (r * H + h) * (Dv + 2), the Dv sums of p_j v_j, the running
// max and the sum of p_j.
template <typename KV>
void AttendTaskT(const Params& p, int64_t g0, int64_t ng, int64_t h0, int64_t nh, int64_t r0, int64_t nr,
                 const float* kt, int64_t kt_first, int64_t key_lo, int64_t key_hi, float* HWY_RESTRICT partial,
                 float* HWY_RESTRICT scratch) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const int64_t M = ng * nh * nr, D = p.D, Dv = p.Dv;
  float* acc = scratch;
  float* run_max = acc + M * Dv;
  float* run_sum = run_max + M;
  float* sc = run_sum + M;
  float* zeros = sc + (M + kGroup) * kKeyBlock;  // scores: a row per query, and a group's padding
  float* spare = zeros + D;
  float* k_wide = spare + Dv;              // [kKeyBlock, D]: an F16 block's keys as float
  float* v_wide = k_wide + kKeyBlock * D;  // [kKeyBlock, Dv]: its values
  std::fill(acc, acc + M * Dv, 0.0f);
  std::fill(run_max, run_max + M, -INFINITY);
  std::fill(run_sum, run_sum + M, 0.0f);
  std::fill(zeros, zeros + D, 0.0f);

  // The keys any of the rows sees (ranges move forward with the row).
  int64_t lo_all, hi_all, unused;
  cpu_attention::key_range(p, p.past + r0, &lo_all, &unused);
  cpu_attention::key_range(p, p.past + r0 + nr - 1, &unused, &hi_all);
  lo_all = std::max(lo_all, key_lo), hi_all = std::min(hi_all, key_hi);
  constexpr bool kF16 = std::is_same_v<KV, hwy::float16_t>;

  // Together: a decode task over 4 or more kv heads of an F32 cache takes
  // each 16 keys' rows for all its heads at once, scores and then values,
  // so that the cache ([T, KH, D]: a key's rows of every kv head adjacent)
  // is read in order. Head by head, one head's rows are 256 bytes every
  // KH * D floats, which one thread read here at 17 GB/s for 8 heads (2 KB
  // apart) and 20 for 4, against 30 in order (BM_CrossAttentionLayers, one
  // thread: 223-282 -> 159-174 us). 2 heads lose less that way (26 GB/s),
  // but a batched step's 16 sequences of 192 keys still gained from it
  // (BM_StepAttention/16/192/24, two threads: 154-182 -> 148-155 us).
  const bool together = !kt && ng >= 2 && !kF16;
  const bool by_four = N >= 4 && D % N == 0;
  thread_local std::vector<QueryGroup> groups;  // kept across calls

  for (int64_t kb = lo_all / kKeyBlock * kKeyBlock; kb < hi_all; kb += kKeyBlock) {
    const int64_t n = std::min(hi_all, kb + kKeyBlock) - kb;
    // Kv head gi's queries, kGroup at a time, that see keys of this block,
    // reading its rows k and v.
    auto add_groups = [&](int64_t gi, const float* k, const float* v, int64_t kstride, int64_t vstride) {
      const int64_t m_end = (gi + 1) * nh * nr;  // this kv head's queries: [gi * nh * nr, m_end)
      for (int64_t m0 = gi * nh * nr; m0 < m_end; m0 += kGroup) {
        // Missing queries (past the head's last) read zeros, see nothing
        // and write to a spare output.
        QueryGroup g;
        g.m0 = m0, g.count = std::min<int64_t>(kGroup, m_end - m0);
        g.k = k, g.v = v, g.kstride = kstride, g.vstride = vstride;
        g.glo = n, g.ghi = 0;
        for (int i = 0; i < kGroup; ++i) {
          const int64_t m = m0 + i;
          g.lo[i] = g.hi[i] = 0;
          g.q[i] = zeros;
          g.o[i] = spare;
          g.bias_row[i] = nullptr;
          g.corr[i] = 1.0f;
          if (i >= g.count) continue;
          g.o[i] = acc + m * Dv;
          const int64_t h = h0 + m / nr, r = r0 + m % nr;
          g.q[i] = p.q + (r * p.H + h) * D;
          if (p.bias) g.bias_row[i] = p.bias + (h * p.S + r) * p.T + kb;
          cpu_attention::key_range(p, p.past + r, &g.lo[i], &g.hi[i]);
          g.lo[i] = std::max<int64_t>(std::max(g.lo[i], key_lo) - kb, 0);
          g.hi[i] = std::min<int64_t>(std::min(g.hi[i], key_hi) - kb, n);
          if (g.lo[i] >= g.hi[i]) g.lo[i] = g.hi[i] = 0;
          else g.glo = std::min(g.glo, g.lo[i]), g.ghi = std::max(g.ghi, g.hi[i]);
        }
        if (g.glo < g.ghi) groups.push_back(g);  // else no query of the group sees this block
      }
    };
    groups.clear();
    if constexpr (!kF16) {
      if (together) {
        for (int64_t gi = 0; gi < ng; ++gi)
          add_groups(gi, static_cast<const float*>(p.k) + (kb * p.KH + g0 + gi) * D,
                     static_cast<const float*>(p.v) + (kb * p.KH + g0 + gi) * p.Vw, p.KH * D, p.KH * p.Vw);
        // Scores: the keys every query sees, 16 at a time for all the heads,
        // then each group's own ends.
        ScoresAsStored(std::span<QueryGroup>(groups), n, sc, D, by_four);
        for (QueryGroup& g : groups) BlockSoftmax(p, g, sc, run_max, run_sum);
        // Values: about 32 KB of rows at a time for all the heads (16 keys
        // of whisper's 8 heads, 64 of a 2-head cache: each piece reloads
        // the outputs); a group's outputs are rescaled with its first keys.
        const int64_t piece = std::clamp<int64_t>((int64_t(8192) / (p.KH * Dv)) / 16 * 16, 16, kKeyBlock);
        int64_t vlo = n, vhi = 0;
        for (const QueryGroup& g : groups) vlo = std::min(vlo, g.glo), vhi = std::max(vhi, g.ghi);
        const float ones[kGroup] = {1, 1, 1, 1, 1, 1, 1, 1};
        static_assert(kGroup == 8, "ones: one per query of a group");
        for (int64_t j = vlo; j < vhi; j = (j / piece + 1) * piece)
          for (const QueryGroup& g : groups) {
            const int64_t a = std::max(g.glo, j), b = std::min(g.ghi, (j / piece + 1) * piece);
            if (a < b) GroupValuesAll(g, a == g.glo ? g.corr : ones, sc, a, b, Dv);
          }
        continue;
      }
    }
    for (int64_t gi = 0; gi < ng; ++gi) {
      const int64_t g = g0 + gi;
      // This kv head's rows of the block, as floats: an F16 cache's are
      // widened once here for all the queries that read them (keys only
      // when read as stored: prompts take kt).
      const KV* k_rows = static_cast<const KV*>(p.k) + (kb * p.KH + g) * D;
      const KV* v_rows = static_cast<const KV*>(p.v) + (kb * p.KH + g) * p.Vw;
      const float *k, *v;
      int64_t kstride, vstride;
      if constexpr (kF16) {
        if (!kt) WidenRows(k_rows, p.KH * D, n, D, k_wide);
        WidenRows(v_rows, p.KH * p.Vw, n, Dv, v_wide);
        k = k_wide, v = v_wide, kstride = D, vstride = Dv;
      } else {
        k = k_rows, v = v_rows, kstride = p.KH * D, vstride = p.KH * p.Vw;
      }
      const size_t first = groups.size();
      add_groups(gi, k, v, kstride, vstride);
      for (size_t gr = first; gr < groups.size(); ++gr) {
        QueryGroup& grp = groups[gr];
        const int64_t j0 = grp.glo / N * N, j1 = (grp.ghi + N - 1) / N * N;
        float* gsc = sc + grp.m0 * kKeyBlock;
        if (kt) {
          GroupScores(grp.q, grp.count, kt + (kb / kKeyBlock - kt_first) * D * kKeyBlock, D, j0, j1, gsc);
        } else {  // only visible keys are read: past them may lie beyond the cache's rows
          // 16 keys at a time for all the group's queries in turn: the 16 K
          // rows (4 KB at head size 64) are read from memory or L2 once and
          // from L1 after, where query by query over the whole block read
          // them from L2 once per query (BM_Attention/1/512, one thread:
          // 32-34 -> 27-29 us).
          ScoresAsStored(std::span<QueryGroup>(&grp, 1), n, sc, D, by_four);
        }
        BlockSoftmax(p, grp, sc, run_max, run_sum);
        GroupValuesAll(grp, grp.corr, sc, grp.glo, grp.ghi, Dv);
      }
    }
  }

  // out = acc / sum; a query that saw no key stays zeros.
  for (int64_t m = 0; m < M; ++m) {
    const int64_t h = h0 + m / nr, r = r0 + m % nr;
    if (partial) {
      float* share = partial + (r * p.H + h) * (Dv + 2);
      std::copy(acc + m * Dv, acc + (m + 1) * Dv, share);
      share[Dv] = run_max[m];
      share[Dv + 1] = run_sum[m];
      continue;
    }
    float* out = p.out + (r * p.H + h) * Dv;
    const float* o = acc + m * Dv;
    if (run_max[m] == -INFINITY && run_sum[m] == 0.0f) {
      std::fill(out, out + Dv, 0.0f);
      continue;
    }
    const auto vs = hn::Set(d, run_sum[m]);
    int64_t e = 0;
    for (; e + N <= Dv; e += N) hn::StoreU(hn::Div(hn::LoadU(d, o + e), vs), d, out + e);
    for (; e < Dv; ++e) out[e] = o[e] / run_sum[m];
  }
}

void AttendTask(const Params& p, int64_t g0, int64_t ng, int64_t h0, int64_t nh, int64_t r0, int64_t nr,
                const float* kt, int64_t kt_first, int64_t key_lo, int64_t key_hi, float* HWY_RESTRICT partial,
                float* HWY_RESTRICT scratch) {
  if (p.kv_f16)
    AttendTaskT<hwy::float16_t>(p, g0, ng, h0, nh, r0, nr, kt, kt_first, key_lo, key_hi, partial, scratch);
  else
    AttendTaskT<float>(p, g0, ng, h0, nh, r0, nr, kt, kt_first, key_lo, key_hi, partial, scratch);
}

// Rows x heads [i0, i1) of the output from `splits` shares of the keys
// (AttendTask's partial results, split s at partials + s * S * H * (Dv + 2)):
// each share rescaled by exp(its max - the overall max), summed, divided by
// the rescaled sum. A query no share saw a key for gets zeros.
void CombineSplits(const Params& p, const float* HWY_RESTRICT partials, int64_t splits, int64_t i0, int64_t i1) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d)), Dv = p.Dv, stride = p.S * p.H * (Dv + 2);
  for (int64_t i = i0; i < i1; ++i) {
    float* out = p.out + i * Dv;
    float top = -INFINITY;
    for (int64_t s = 0; s < splits; ++s) top = std::max(top, partials[s * stride + i * (Dv + 2) + Dv]);
    std::fill(out, out + Dv, 0.0f);
    if (top == -INFINITY) continue;
    float sum = 0;
    for (int64_t s = 0; s < splits; ++s) {
      const float* share = partials + s * stride + i * (Dv + 2);
      if (share[Dv] == -INFINITY) continue;
      const float w = std::exp(share[Dv] - top);
      sum += w * share[Dv + 1];
      const auto vw = hn::Set(d, w);
      int64_t e = 0;
      for (; e + N <= Dv; e += N)
        hn::StoreU(hn::MulAdd(vw, hn::LoadU(d, share + e), hn::LoadU(d, out + e)), d, out + e);
      for (; e < Dv; ++e) out[e] += w * share[e];
    }
    const auto vs = hn::Set(d, sum);
    int64_t e = 0;
    for (; e + N <= Dv; e += N) hn::StoreU(hn::Div(hn::LoadU(d, out + e), vs), d, out + e);
    for (; e < Dv; ++e) out[e] /= sum;
  }
}

// Rows [r0, r1) of x [rows, n], in place: x + bias (where given), then
// exp(x - the row's max); inv[r] = 1 / the row's sum. The softmax of the
// dense path, left unnormalised: its products are divided after.
void ExpRows(float* HWY_RESTRICT x, int64_t n, const float* HWY_RESTRICT bias, float* HWY_RESTRICT inv, int64_t r0,
             int64_t r1) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  for (int64_t r = r0; r < r1; ++r) {
    float* row = x + r * n;
    const float* b = bias ? bias + r * n : nullptr;
    auto vmax = hn::Set(d, -INFINITY);
    int64_t j = 0;
    for (; j + N <= n; j += N) {
      auto v = hn::LoadU(d, row + j);
      if (b) v = hn::Add(v, hn::LoadU(d, b + j)), hn::StoreU(v, d, row + j);
      vmax = hn::Max(vmax, v);
    }
    float top = hn::GetLane(hn::MaxOfLanes(d, vmax));
    for (; j < n; ++j) {
      if (b) row[j] += b[j];
      top = std::max(top, row[j]);
    }
    const auto vtop = hn::Set(d, top);
    auto vsum = hn::Zero(d);
    j = 0;
    for (; j + N <= n; j += N) {
      const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, row + j), vtop));
      hn::StoreU(e, d, row + j);
      vsum = hn::Add(vsum, e);
    }
    float sum = hn::GetLane(hn::SumOfLanes(d, vsum));
    for (; j < n; ++j) sum += row[j] = std::exp(row[j] - top);
    inv[r] = 1.0f / sum;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(ScratchFloats);
HWY_EXPORT(TransposeKeys);
HWY_EXPORT(AttendTask);
HWY_EXPORT(CombineSplits);
HWY_EXPORT(ExpRows);

void exp_rows(float* x, int64_t rows, int64_t n, const float* bias, float* inv_sum) {
  const int64_t per = 16;
#pragma omp parallel for schedule(static)
  for (int64_t r0 = 0; r0 < rows; r0 += per)
    HWY_DYNAMIC_DISPATCH(ExpRows)(x, n, bias, inv_sum, r0, std::min(rows, r0 + per));
}

namespace {

using cpu_attention::kKeyBlock;
using cpu_attention::Params;

// Query rows per task: enough queries to reuse each K / V block, few
// enough that a long prompt splits into many tasks.
constexpr int64_t kQueryBlock = 16;
// A decode step over at least this many keys splits them into contiguous
// shares (each thread reading one share of the cache, every kv head's rows,
// rather than every other row of it, as splitting the kv heads would), and
// combines the shares' softmax sums after. The shares depend on the keys
// alone, however many threads there are, so that a step computes the same
// sums on any number of threads (the thread governor changes it between
// decode steps).
constexpr int64_t kSplitKeysFrom = 256;

// How many shares a step's n visible keys take: a key block each up to 16
// blocks, so that threads get near-equal shares of a short cache (whisper's
// 1500 encoder keys in 5 shares of about 256 gave two threads 896 and 604
// keys; in 11 of 128 they get 768 and 732: BM_CrossAttentionLayers 104-113
// -> 85-92 us); past that, shares of about two blocks, up to 64, since each
// share's partial sums cost more than the balance gains (4096 keys in 32
// shares: 182-188 us against 175-178 in 16).
int64_t share_count(int64_t n) {
  const int64_t blocks = n / kKeyBlock;
  return blocks <= 16 ? std::max<int64_t>(2, blocks) : std::clamp<int64_t>(blocks / 2, 16, 64);
}

// Share s of a decode step's visible keys [lo, hi) in `splits`: its first
// key, a multiple of kKeyBlock inside the range.
int64_t share_start(int64_t lo, int64_t hi, int64_t splits, int64_t s) {
  if (s == 0) return lo;
  if (s == splits) return hi;
  return std::max(lo, (lo + (hi - lo) * s / splits) / kKeyBlock * kKeyBlock);
}

// A thread's scratch of at least n floats, kept across calls.
float* thread_scratch(size_t n) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return scratch.data();
}

// A decode step's visible keys [lo, hi) in shares (share_count), a task
// each: every query head over its share, each key block read once for all
// kv heads; then the shares are combined per query.
void split_keys(const Params& p, int64_t lo, int64_t hi, bool team) {
  const int64_t splits = share_count(hi - lo);
  const int64_t group = p.H / p.KH, share_floats = p.S * p.H * (p.Dv + 2);
  const size_t scratch_floats = HWY_DYNAMIC_DISPATCH(ScratchFloats)(p.H * p.S, p.D, p.Dv);
  thread_local std::vector<float> partial_buffer;  // kept across calls
  partial_buffer.resize(size_t(splits * share_floats));
  float* partials = partial_buffer.data();
  auto share = [&](int64_t s, float* scratch) {
    HWY_DYNAMIC_DISPATCH(AttendTask)(p, 0, p.KH, 0, group, 0, p.S, nullptr, 0, share_start(lo, hi, splits, s),
                                     share_start(lo, hi, splits, s + 1), partials + s * share_floats, scratch);
  };
  if (!team) {
    float* scratch = thread_scratch(scratch_floats);
    for (int64_t s = 0; s < splits; ++s) share(s, scratch);
    HWY_DYNAMIC_DISPATCH(CombineSplits)(p, partials, splits, 0, p.S * p.H);
    return;
  }
#pragma omp parallel
  {
    float* scratch = thread_scratch(scratch_floats);
#pragma omp for schedule(static)
    for (int64_t s = 0; s < splits; ++s) share(s, scratch);
#pragma omp for schedule(static)
    for (int64_t i = 0; i < p.S * p.H; ++i) HWY_DYNAMIC_DISPATCH(CombineSplits)(p, partials, splits, i, i + 1);
  }
}

Status attention_cpu(KernelContext& ctx, const Kernel& reference);

// Groups (an image's tokens seeing each other) as the bias they amount to:
// the causal and window masks and the groups made one [H, S, T] mask of 0
// and -inf, added to any bias given, and the call run unmasked on the fast
// path. Past 2^24 scores the reference computes it instead.
Status attention_in_groups(KernelContext& ctx, const Kernel& reference) {
  const Tensor& Q = ctx.inputs[0];
  const Tensor& K = ctx.inputs[1];
  const Tensor& G = ctx.inputs[4];
  if (Q.shape.size() != 3 || K.shape.size() != 3 || G.dtype != DType::I32 || G.shape != Dims{Q.dim(0)})
    return reference(ctx);
  const int64_t S = Q.dim(0), H = Q.dim(1), T = K.dim(0), past = T - S;
  const bool causal = attr_bool(ctx.attrs, "causal", true);
  const int64_t window = attr_int(ctx.attrs, "window", 0);
  if (T < S || H * S * T > (int64_t(1) << 24)) return reference(ctx);
  const bool has_bias = ctx.inputs[3].data;
  if (has_bias && (ctx.inputs[3].dtype != DType::F32 || ctx.inputs[3].shape != Dims{H, S, T})) return reference(ctx);
  Tensor mask = Tensor::zeros(DType::F32, {H, S, T});
  const int32_t* g = G.i32();
  for (int64_t r = 0; r < S; ++r) {
    float* row = mask.f32() + r * T;
    const int64_t i = past + r;
    for (int64_t j = 0; j < T; ++j) {
      bool seen = !(causal && j > i) && !(window > 0 && (causal ? j <= i - window : std::abs(i - j) >= window));
      seen = seen || (g[r] > 0 && j >= past && g[j - past] == g[r]);
      if (!seen) row[j] = -INFINITY;
    }
  }
  for (int64_t h = 0; h < H; ++h) {
    float* m = mask.f32() + h * S * T;
    if (h > 0) std::copy(mask.f32(), mask.f32() + S * T, m);
    if (has_bias)
      for (int64_t k = 0; k < S * T; ++k) m[k] += ctx.inputs[3].f32()[h * S * T + k];
  }
  std::vector<Tensor> inputs(ctx.inputs.begin(), ctx.inputs.begin() + 3);
  inputs.push_back(mask);
  Attrs attrs = ctx.attrs;
  attrs["causal"] = false;
  attrs["window"] = 0;
  KernelContext unmasked{attrs, inputs, ctx.outputs, ctx.state, ctx.max_context, ctx.where, ctx.options, nullptr};
  return attention_cpu(unmasked, reference);
}

Status attention_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.sequences)
    return attention_per_sequence(
        ctx, [&reference](KernelContext& one) { return attention_cpu(one, reference); }, /*across_threads=*/true);
  // The fast case is every case the reference computes with F32 inputs,
  // and the same with K and V both F16 (a --kv-f16 cache, read as stored);
  // the rest (wrong types or shapes, a causal call with fewer keys than
  // queries) goes to the reference for its error message.
  if (ctx.inputs.size() < 3 || ctx.inputs.size() > 5 || ctx.outputs.size() != 1) return reference(ctx);
  // Groups matter only where a row is in one (an image's tokens in a
  // prompt); a decode step's text token is in none: the plain path.
  if (ctx.inputs.size() == 5 && ctx.inputs[4].data && ctx.inputs[4].dtype == DType::I32 &&
      std::any_of(ctx.inputs[4].i32(), ctx.inputs[4].i32() + ctx.inputs[4].numel(), [](int32_t g) { return g > 0; }))
    return attention_in_groups(ctx, reference);
  for (size_t i = 0; i < 3; ++i)
    if (!ctx.inputs[i].data || ctx.inputs[i].shape.size() != 3) return reference(ctx);
  const DType kv = ctx.inputs[1].dtype;
  if (ctx.inputs[0].dtype != DType::F32 || (kv != DType::F32 && kv != DType::F16) || ctx.inputs[2].dtype != kv)
    return reference(ctx);
  const Tensor& Q = ctx.inputs[0];
  const Tensor& K = ctx.inputs[1];
  const Tensor& V = ctx.inputs[2];
  const bool causal = attr_bool(ctx.attrs, "causal", true);
  if (K.dim(0) != V.dim(0) || K.dim(1) != V.dim(1) || Q.dim(2) != K.dim(2) || K.dim(1) <= 0 ||
      Q.dim(1) % K.dim(1) != 0)
    return reference(ctx);
  Params p;
  p.S = Q.dim(0), p.H = Q.dim(1), p.D = Q.dim(2), p.T = K.dim(0), p.KH = K.dim(1), p.Vw = V.dim(2);
  const int64_t value_dim = attr_int(ctx.attrs, "value_dim", 0);
  if (value_dim < 0 || value_dim > p.Vw) return reference(ctx);
  p.Dv = value_dim > 0 ? value_dim : p.Vw;
  const Dims& out_shape = ctx.outputs[0].shape;  // compared in place: no Dims made per call
  const bool out_fits = out_shape.size() == 3 && out_shape[0] == p.S && out_shape[1] == p.H && out_shape[2] == p.Dv;
  if ((causal && p.T < p.S) || ctx.outputs[0].dtype != DType::F32 || !out_fits) return reference(ctx);
  p.q = Q.f32(), p.k = K.data, p.v = V.data, p.kv_f16 = kv == DType::F16, p.out = ctx.outputs[0].f32();
  p.past = p.T - p.S;
  p.window = attr_int(ctx.attrs, "window", 0);
  p.causal = causal;
  const double scale_attr = attr_float(ctx.attrs, "scale", 0.0);
  p.scale = float(scale_attr != 0.0 ? scale_attr : 1.0 / std::sqrt(double(p.D)));
  p.softcap = float(attr_float(ctx.attrs, "softcap", 0.0));
  if (ctx.inputs.size() >= 4 && ctx.inputs[3].data) {
    const Tensor& B = ctx.inputs[3];
    const bool fits = B.dtype == DType::F32 && B.shape.size() == 3 && B.dim(0) == p.H && B.dim(1) == p.S &&
                      B.dim(2) == p.T;
    if (!fits) return reference(ctx);
    p.bias = B.f32();
  }
  if (p.S == 0 || p.H == 0) return {};
  if (p.Dv == p.Vw && attention_by_matmul_fits(p.S, p.T, p.causal, p.window, p.softcap, kv))
    return attention_by_matmul(Q, K, V, p.bias, p.scale, ctx.outputs[0], ctx.where);

  // Tasks: (kv head, slice of its query heads, block of rows). A group's
  // heads share a task, reading each K / V row once, unless that leaves
  // threads idle (a decode step), when the group is split.
  const int64_t group = p.H / p.KH;
  const int64_t row_blocks = (p.S + kQueryBlock - 1) / kQueryBlock;
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();  // in a region: this thread alone
  const int64_t slices = std::min(group, std::max<int64_t>(1, (threads + p.KH * row_blocks - 1) / (p.KH * row_blocks)));
  const int64_t per_slice = (group + slices - 1) / slices;
  const int64_t tasks = p.KH * slices * row_blocks;
  const int64_t rows_per = std::min(p.S, kQueryBlock);
  const size_t scratch_floats = HWY_DYNAMIC_DISPATCH(ScratchFloats)(per_slice * rows_per, p.D, p.Dv);
  // Many queries per task (a prompt): every key block any of them sees is
  // transposed once, up front, for all tasks; a few (decode): dot products
  // with the keys as stored. Transposing a block costs about what 16
  // queries' sums across lanes do.
  int64_t first = 0, blocks = 0;
  thread_local std::vector<float> kt_buffer;  // kept across calls: no allocation once warm
  float* kt = nullptr;
  if (per_slice * rows_per >= 16) {
    int64_t lo, hi, unused;
    cpu_attention::key_range(p, p.past, &lo, &unused);
    cpu_attention::key_range(p, p.past + p.S - 1, &unused, &hi);
    first = lo / kKeyBlock;
    blocks = std::max<int64_t>(0, (hi + kKeyBlock - 1) / kKeyBlock - first);
    kt_buffer.resize(size_t(p.KH * blocks * p.D * kKeyBlock));
    kt = kt_buffer.data();
  }
  const size_t head_floats = size_t(blocks * p.D * kKeyBlock);
  // Under about 512K multiply-adds one thread beats a team of two: a
  // region costs ~3 us here even with the pool spinning from the matmul
  // before, and one thread now takes 14 heads over 16 keys in 1.2 us, over
  // 128 in 5.0 (two: 4.2-6.1 and 6.8-8.9), over 512 in 19.6-19.9 (two:
  // 16.7-20.2), over 4096 in 174-179 (two: 110-113).
  //
  // Without a team of its own (one thread, or called from a parallel
  // region: a batched step's sequences run side by side) the work is plain
  // loops: even an inactive OpenMP region allocates a team and frees it,
  // and an orphaned worksharing loop would bind to the caller's team.
  const bool team = threads > 1 && p.H * p.S * p.T * (p.D + p.Dv) >= (1 << 19);
  if (!kt && p.S <= kQueryBlock) {
    int64_t lo, hi, unused;  // the keys any query sees
    cpu_attention::key_range(p, p.past, &lo, &unused);
    cpu_attention::key_range(p, p.past + p.S - 1, &unused, &hi);
    if (hi - lo >= kSplitKeysFrom) {
      split_keys(p, lo, hi, team);
      return {};
    }
  }
  auto transpose = [&](int64_t t) {
    HWY_DYNAMIC_DISPATCH(TransposeKeys)(p, t / blocks, first + t % blocks, kt + size_t(t) * p.D * kKeyBlock);
  };
  auto task = [&](int64_t t, float* scratch) {
    // Later row blocks see more keys (causal): all of them go first.
    const int64_t rb = row_blocks - 1 - t / (p.KH * slices);
    const int64_t slice = t % slices, g = (t / slices) % p.KH;
    const int64_t h0 = g * group + slice * per_slice, nh = std::min(per_slice, group - slice * per_slice);
    const int64_t r0 = rb * kQueryBlock, nr = std::min(kQueryBlock, p.S - r0);
    if (nh > 0)
      HWY_DYNAMIC_DISPATCH(AttendTask)(p, g, 1, h0, nh, r0, nr, kt ? kt + size_t(g) * head_floats : nullptr, first,
                                       0, p.T, nullptr, scratch);
  };
  if (!team || tasks < 2) {
    // A decode step on one thread: every kv head in one task, so that the
    // cache's rows are read in order (`together` in AttendTaskT), not one
    // head's share of each row in a pass per head. Its scores, a row per
    // query, stay in L1.
    if (!kt && p.S * p.H <= 64) {
      float* scratch = thread_scratch(HWY_DYNAMIC_DISPATCH(ScratchFloats)(p.H * p.S, p.D, p.Dv));
      HWY_DYNAMIC_DISPATCH(AttendTask)(p, 0, p.KH, 0, group, 0, p.S, nullptr, 0, 0, p.T, nullptr, scratch);
      return {};
    }
    float* scratch = thread_scratch(scratch_floats);
    if (kt)
      for (int64_t t = 0; t < p.KH * blocks; ++t) transpose(t);
    for (int64_t t = 0; t < tasks; ++t) task(t, scratch);
    return {};
  }
#pragma omp parallel
  {
    if (kt) {
#pragma omp for schedule(static)
      for (int64_t t = 0; t < p.KH * blocks; ++t) transpose(t);
    }
    float* scratch = thread_scratch(scratch_floats);
#pragma omp for schedule(dynamic, 1)
    for (int64_t t = 0; t < tasks; ++t) task(t, scratch);
  }
  return {};
}

}  // namespace

void register_cpu_attention(OpTable& t) {
  const Kernel* ref = t.kernel("attention", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for attention");
  // Every path writes each output element (a query seeing no key: zeros).
  t.add_kernel(
      "attention", "cpu", [reference = *ref](KernelContext& ctx) { return attention_cpu(ctx, reference); }, nullptr,
      nullptr, /*fills=*/true);
}

}  // namespace arch
#endif  // HWY_ONCE

// The cpu backend's gated_delta_rule: the reference's recurrence, kept in
// the same RecurrentState (a session may switch backends between calls).
// Two forms of the same sums:
// - short pieces (decode): the recurrence, column block by column block of
//   S (a column of S only ever meets the same column of v, so blocks are
//   independent); each position is one pass over the block, which decays
//   it, writes the rank-1 update and gathers the next position's S^T k and
//   S^T q, with o = exp(g) S^T q + (k . q) delta from the pass before;
// - long pieces (a prompt): chunks of kChunk positions as small matrix
//   products (transformers' torch_chunk_gated_delta_rule, regrouped: U and
//   W by forward substitution rather than through (I - A)^-1; a partial
//   last chunk is its zero padding left out).
// Heads (and column blocks, and pieces) go to the threads; float32 sums.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/reference/recurrent_state.h"
#include "kernels/reference/shape_rules.h"

// Guarded: foreach_target includes this file once per target.
#ifndef ARCH_KERNELS_CPU_GATED_DELTA_RULE_HEAD
#define ARCH_KERNELS_CPU_GATED_DELTA_RULE_HEAD
namespace arch::cpu_delta {

// One value head's rows of one piece: q, k (its key head's), v, g, beta,
// o at the piece's first row, with the strides between rows; S [Dk, Dv].
struct Head {
  const float *q, *k, *v, *g, *beta;
  float* o;
  float* S;
  int64_t qk_row, v_row, g_row;  // o's rows are v's
  int64_t rows, Dk, Dv;
};

// Positions per chunk. transformers' 64 suits a GPU; here each chunk's
// products with S cost the same per position at any size and the in-chunk
// ones grow with it: a 4096-row prompt (H 32, KH 16, Dk = Dv = 128, one
// thread) took 0.20 s by chunks of 64, 0.17 by 32 or 16 (AVX2: 0.24, 0.21,
// 0.20), against 0.20 (AVX2 0.36) by the recurrence.
constexpr int64_t kChunk = 16;

}  // namespace arch::cpu_delta
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/gated_delta_rule_cpu.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include "kernels/cpu/dot-inl.h"
#include <hwy/cache_control.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using cpu_delta::Head;
using cpu_delta::kChunk;

// Vectors a register tile spans across columns: AVX-512 has the 32
// registers for 4 (16 accumulators); narrower targets 2.
#if HWY_TARGET <= HWY_AVX3
constexpr int kV = 4;
#else
constexpr int kV = 2;
#endif

// ---- the recurrence -----------------------------------------------------

// Columns [j0, j0 + V lanes) of S through all the piece's rows.
template <class D, int V>
HWY_INLINE void RecurrentCols(D d, const Head& a, int64_t j0) {
  using VF = hn::Vec<D>;
  const int64_t N = int64_t(hn::Lanes(d)), Dk = a.Dk, Dv = a.Dv;
  float* HWY_RESTRICT S = a.S + j0;
  VF mk[V], mq[V], delta[V];  // S^T k, S^T q before this row's decay
#pragma GCC unroll 4
  for (int v = 0; v < V; ++v) mk[v] = mq[v] = hn::Zero(d);
  for (int64_t i = 0; i < Dk; ++i) {
    const VF ki = hn::Set(d, a.k[i]), qi = hn::Set(d, a.q[i]);
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      const VF s = hn::LoadU(d, S + i * Dv + v * N);
      mk[v] = hn::MulAdd(s, ki, mk[v]);
      mq[v] = hn::MulAdd(s, qi, mq[v]);
    }
  }
  for (int64_t t = 0; t < a.rows; ++t) {
    const float* k = a.k + t * a.qk_row;
    const float* v_in = a.v + t * a.v_row + j0;
    float* o = a.o + t * a.v_row + j0;
    const float decay = std::exp(a.g[t * a.g_row]);
    const VF vd = hn::Set(d, decay), vb = hn::Set(d, a.beta[t * a.g_row]);
    const VF kq = hn::Set(d, Dot(k, a.q + t * a.qk_row, Dk));
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      // delta = beta (v - exp(g) S^T k); o = (exp(g) S + k delta^T)^T q
      delta[v] = hn::Mul(vb, hn::NegMulAdd(vd, mk[v], hn::LoadU(d, v_in + v * N)));
      hn::StoreU(hn::MulAdd(vd, mq[v], hn::Mul(kq, delta[v])), d, o + v * N);
    }
    if (t + 1 == a.rows) {
      for (int64_t i = 0; i < Dk; ++i) {
        const VF ki = hn::Set(d, k[i]);
#pragma GCC unroll 4
        for (int v = 0; v < V; ++v) {
          float* p = S + i * Dv + v * N;
          hn::StoreU(hn::MulAdd(ki, delta[v], hn::Mul(hn::LoadU(d, p), vd)), d, p);
        }
      }
      break;
    }
    // The update, and the next row's sums over the updated S, in one pass.
    const float* k1 = k + a.qk_row;
    const float* q1 = a.q + (t + 1) * a.qk_row;
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) mk[v] = mq[v] = hn::Zero(d);
    for (int64_t i = 0; i < Dk; ++i) {
      const VF ki = hn::Set(d, k[i]), k1i = hn::Set(d, k1[i]), q1i = hn::Set(d, q1[i]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) {
        float* p = S + i * Dv + v * N;
        const VF s = hn::MulAdd(ki, delta[v], hn::Mul(hn::LoadU(d, p), vd));
        hn::StoreU(s, d, p);
        mk[v] = hn::MulAdd(s, k1i, mk[v]);
        mq[v] = hn::MulAdd(s, q1i, mq[v]);
      }
    }
  }
}

// Columns [j0, j1) of one head, by blocks of kV vectors, then vectors, then lanes.
void RecurrentHead(const Head& a, int64_t j0, int64_t j1) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t j = j0;
  for (; j + kV * N <= j1; j += kV * N) RecurrentCols<decltype(d), kV>(d, a, j);
  for (; j + N <= j1; j += N) RecurrentCols<decltype(d), 1>(d, a, j);
  for (; j < j1; ++j) RecurrentCols<decltype(d1), 1>(d1, a, j);
}

// ---- small matrix products for the chunks ---------------------------------

// C[m, n] = alpha sum_k A[m sam + k sak] B[k ldb + n] (+ beta C[m, n] with
// keep), m < R, n < V lanes: one register tile.
template <class D, int R, int V>
HWY_INLINE void Tile(D d, int64_t K, const float* HWY_RESTRICT A, int64_t sam, int64_t sak,
                     const float* HWY_RESTRICT B, int64_t ldb, float* HWY_RESTRICT C, int64_t ldc, float alpha,
                     float beta, bool keep) {
  using VF = hn::Vec<D>;
  const int64_t N = int64_t(hn::Lanes(d));
  VF acc[R][V];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) acc[r][v] = hn::Zero(d);
  }
  for (int64_t k = 0; k < K; ++k) {
    VF b[V];
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) b[v] = hn::LoadU(d, B + k * ldb + v * N);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const VF x = hn::Set(d, A[r * sam + k * sak]);
#pragma GCC unroll 4
      for (int v = 0; v < V; ++v) acc[r][v] = hn::MulAdd(x, b[v], acc[r][v]);
    }
  }
  const VF va = hn::Set(d, alpha), vb = hn::Set(d, beta);
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
    for (int v = 0; v < V; ++v) {
      float* c = C + r * ldc + v * N;
      hn::StoreU(keep ? hn::MulAdd(acc[r][v], va, hn::Mul(hn::LoadU(d, c), vb)) : hn::Mul(acc[r][v], va), d, c);
    }
  }
}

template <int R>
HWY_INLINE void RowBlock(int64_t N, int64_t K, const float* A, int64_t sam, int64_t sak, const float* B, int64_t ldb,
                         float* C, int64_t ldc, float alpha, float beta, bool keep) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t L = int64_t(hn::Lanes(d));
  int64_t n = 0;
  for (; n + kV * L <= N; n += kV * L)
    Tile<decltype(d), R, kV>(d, K, A, sam, sak, B + n, ldb, C + n, ldc, alpha, beta, keep);
  for (; n + L <= N; n += L) Tile<decltype(d), R, 1>(d, K, A, sam, sak, B + n, ldb, C + n, ldc, alpha, beta, keep);
  for (; n < N; ++n) Tile<decltype(d1), R, 1>(d1, K, A, sam, sak, B + n, ldb, C + n, ldc, alpha, beta, keep);
}

// Which part of a product is wanted: all of it; A lower triangular (row m
// reads k <= m only); or C's lower triangle only (n <= m; the tiles on the
// diagonal compute a little past it).
enum Tri { kFull, kLowerA, kLowerC };

// C [M, N] = alpha A [M, K] B [K, N] (+ beta C with keep); A read through
// strides (a transposed A costs nothing), B and C by rows.
void Gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t sam, int64_t sak, const float* B, int64_t ldb,
          float* C, int64_t ldc, float alpha, float beta, bool keep, Tri tri) {
  const int64_t L = int64_t(hn::Lanes(hn::ScalableTag<float>()));
  for (int64_t m0 = 0; m0 < M; m0 += 4) {
    const int64_t r = std::min<int64_t>(4, M - m0);
    const int64_t Kr = tri == kLowerA ? std::min(K, m0 + r) : K;
    const int64_t Nr = tri == kLowerC ? std::min(N, (m0 + r + L - 1) / L * L) : N;
    const float* a = A + m0 * sam;
    float* c = C + m0 * ldc;
    switch (r) {
      case 4: RowBlock<4>(Nr, Kr, a, sam, sak, B, ldb, c, ldc, alpha, beta, keep); break;
      case 3: RowBlock<3>(Nr, Kr, a, sam, sak, B, ldb, c, ldc, alpha, beta, keep); break;
      case 2: RowBlock<2>(Nr, Kr, a, sam, sak, B, ldb, c, ldc, alpha, beta, keep); break;
      default: RowBlock<1>(Nr, Kr, a, sam, sak, B, ldb, c, ldc, alpha, beta, keep); break;
    }
  }
}

// row[j] *= scale exp(gi - gc[j]), j < n.
HWY_INLINE void ScaleByDecay(float* HWY_RESTRICT row, const float* HWY_RESTRICT gc, float gi, float scale, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto vg = hn::Set(d, gi), vs = hn::Set(d, scale), cap = hn::Set(d, 100.0f);
  int64_t j = 0;
  for (; j + N <= n; j += N) {
    // Highway's Exp holds up to +104; past ~88.7 it is inf, as std::exp.
    const auto e = hn::Exp(d, hn::Min(hn::Sub(vg, hn::LoadU(d, gc + j)), cap));
    hn::StoreU(hn::Mul(hn::Mul(hn::LoadU(d, row + j), e), vs), d, row + j);
  }
  for (; j < n; ++j) row[j] *= scale * std::exp(gi - gc[j]);
}

// ---- the chunked form -----------------------------------------------------

// Rows a chunk's copy asks for ahead of its reading them.
constexpr int64_t kAhead = 4;

HWY_INLINE void PrefetchRow(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) hwy::Prefetch(p + i);
}

// y = s x (y may be x).
HWY_INLINE void ScaleRow(float* y, const float* x, float s, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  const auto vs = hn::Set(d, s);
  int64_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vs), d, y + i);
  for (; i < n; ++i) y[i] = x[i] * s;
}

// One head's piece, chunk by chunk (positions t < c of a chunk, Gc_t the
// sum of its g up to t, S the state at its start):
//   A[i][j] = -beta_i (k_i . k_j) exp(Gc_i - Gc_j), j < i
//   U = (I - A)^-1 (v beta), W = (I - A)^-1 (k beta exp(Gc))  (forward substitution)
//   Vn = U - W S            (the chunk's deltas)
//   o_t = exp(Gc_t) q_t^T S + sum_{j <= t} (q_t . k_j) exp(Gc_t - Gc_j) Vn_j
//   S = exp(Gc_last) S + sum_j k_j (exp(Gc_last - Gc_j) Vn_j)^T
void ChunkedHead(const Head& a) {
  const int64_t Dk = a.Dk, Dv = a.Dv, W = Dv + Dk, C = kChunk;
  // Per thread, grown once: Kt [Dk, C] (k transposed), Gkk and Gqk [C, C],
  // X [C, Dv + Dk] (U then Vn | W), Qe [C, Dk], gc [C].
  thread_local std::vector<float> buf;
  const size_t need = size_t(Dk * C + 2 * C * C + C * W + C * Dk + C);
  if (buf.size() < need) buf.resize(need);
  float* Kt = buf.data();
  float* Gkk = Kt + Dk * C;
  float* Gqk = Gkk + C * C;
  float* X = Gqk + C * C;
  float* Qe = X + C * W;
  float* gc = Qe + C * Dk;
  float* S = a.S;
  for (int64_t c0 = 0; c0 < a.rows; c0 += C) {
    const int64_t c = std::min(C, a.rows - c0);
    const float* k = a.k + c0 * a.qk_row;
    const float* q = a.q + c0 * a.qk_row;
    const float* v = a.v + c0 * a.v_row;
    const float* g = a.g + c0 * a.g_row;
    const float* beta = a.beta + c0 * a.g_row;
    float* o = a.o + c0 * a.v_row;
    float run = 0;
    for (int64_t t = 0; t < c; ++t) gc[t] = run += g[t * a.g_row];
    for (int64_t t = 0; t < c; ++t) {
      const float bt = beta[t * a.g_row], et = std::exp(gc[t]);
      const float *kt = k + t * a.qk_row, *qt = q + t * a.qk_row, *vt = v + t * a.v_row;
      // A head's rows are a page apart: ask for them a few rows ahead.
      if (t + kAhead < c) {
        PrefetchRow(kt + kAhead * a.qk_row, Dk);
        PrefetchRow(qt + kAhead * a.qk_row, Dk);
        PrefetchRow(vt + kAhead * a.v_row, Dv);
      }
      ScaleRow(X + t * W, vt, bt, Dv);
      ScaleRow(X + t * W + Dv, kt, bt * et, Dk);
      ScaleRow(Qe + t * Dk, qt, et, Dk);
      for (int64_t i = 0; i < Dk; ++i) Kt[i * C + t] = kt[i];
    }
    Gemm(c, c, Dk, k, a.qk_row, 1, Kt, C, Gkk, C, 1, 0, false, kLowerC);
    Gemm(c, c, Dk, q, a.qk_row, 1, Kt, C, Gqk, C, 1, 0, false, kLowerC);
    for (int64_t i = 0; i < c; ++i) {
      ScaleByDecay(Gkk + i * C, gc, gc[i], -beta[i * a.g_row], i);
      ScaleByDecay(Gqk + i * C, gc, gc[i], 1.0f, i + 1);
      for (int64_t j = i + 1; j < c; ++j) Gqk[i * C + j] = 0.0f;  // the lower-A product reads to its tile's edge
    }
    // X_i += sum_{m < i} A[i][m] X_m: blocks of 4 rows from the rows before
    // them as one product, then within the block row by row.
    for (int64_t i0 = 0; i0 < c; i0 += 4) {
      const int64_t r = std::min<int64_t>(4, c - i0);
      if (i0 > 0) Gemm(r, W, i0, Gkk + i0 * C, C, 1, X, W, X + i0 * W, W, 1, 1, true, kFull);
      for (int64_t i = i0 + 1; i < i0 + r; ++i)
        Gemm(1, W, i - i0, Gkk + i * C + i0, C, 1, X + i0 * W, W, X + i * W, W, 1, 1, true, kFull);
    }
    Gemm(c, Dv, Dk, X + Dv, W, 1, S, Dv, X, W, -1, 1, true, kFull);          // Vn = U - W S
    Gemm(c, Dv, Dk, Qe, Dk, 1, S, Dv, o, a.v_row, 1, 0, false, kFull);        // o = Qe S
    Gemm(c, Dv, c, Gqk, C, 1, X, W, o, a.v_row, 1, 1, true, kLowerA);         //   + QK Vn
    for (int64_t j = 0; j < c; ++j) ScaleRow(X + j * W, X + j * W, std::exp(gc[c - 1] - gc[j]), Dv);
    Gemm(Dk, Dv, c, Kt, C, 1, X, W, S, Dv, 1, std::exp(gc[c - 1]), true, kFull);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(RecurrentHead);
HWY_EXPORT(ChunkedHead);

namespace {

using cpu_delta::Head;

// Pieces of at least this many rows run by chunks: from 16 rows they cost
// less a row than the recurrence (34 against 41 us, AVX2 50 against 56;
// H 32, KH 16, Dk = Dv = 128, one thread), at 8 about the same.
constexpr int64_t kChunkedMinRows = 16;
// Columns of S per work item of the recurrence (decode: heads x blocks
// give the threads enough items, each block staying in L1 between passes).
constexpr int64_t kColumns = 64;
// Below this many multiply-adds a call stays on one thread.
constexpr int64_t kParallelMin = 1 << 16;

Status gated_delta_rule_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() != 5 || ctx.outputs.size() != 2) return reference(ctx);
  for (size_t i = 0; i < 5; ++i) {
    const Tensor& t = ctx.inputs[i];
    if (!t.data || t.dtype != DType::F32 || t.shape.size() != (i < 3 ? 3u : 2u)) return reference(ctx);
  }
  const Tensor &Q = ctx.inputs[0], &Kt = ctx.inputs[1], &V = ctx.inputs[2], &G = ctx.inputs[3], &B = ctx.inputs[4];
  const int64_t S = V.dim(0), H = V.dim(1), Dv = V.dim(2), KH = Q.dim(1), Dk = Q.dim(2);
  if (Q.shape != Kt.shape || Q.dim(0) != S || G.shape != Dims{S, H} || B.shape != Dims{S, H} || KH < 1 ||
      H % KH != 0 || ctx.outputs[0].dtype != DType::F32 || ctx.outputs[0].shape != Dims{S, H, Dv})
    return reference(ctx);
  ARCH_TRY(StateCall call, begin_state_call(ctx, "gated_delta_rule", S, H * Dk * Dv));
  const int64_t per_key = H / KH;
  std::vector<Head> chunked, recurrent;
  int64_t chunked_work = 0, recurrent_work = 0;
  for (const StatePiece& p : call.pieces) {
    if (p.rows == 0) continue;
    const bool by_chunks = p.rows >= kChunkedMinRows;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t qk = (p.row * KH + h / per_key) * Dk;
      Head a{Q.f32() + qk, Kt.f32() + qk, V.f32() + (p.row * H + h) * Dv, G.f32() + p.row * H + h,
             B.f32() + p.row * H + h, ctx.outputs[0].f32() + (p.row * H + h) * Dv,
             call.state->slot(p.slot) + h * Dk * Dv, KH * Dk, H * Dv, H, p.rows, Dk, Dv};
      (by_chunks ? chunked : recurrent).push_back(a);
      (by_chunks ? chunked_work : recurrent_work) += p.rows * Dk * Dv;
    }
  }
  parallel_for(int64_t(chunked.size()), chunked_work >= kParallelMin,
               [&](int64_t i) { HWY_DYNAMIC_DISPATCH(ChunkedHead)(chunked[size_t(i)]); });
  const int64_t blocks = (Dv + kColumns - 1) / kColumns;
  parallel_for(int64_t(recurrent.size()) * blocks, recurrent_work >= kParallelMin, [&](int64_t i) {
    const int64_t j0 = (i % blocks) * kColumns;
    HWY_DYNAMIC_DISPATCH(RecurrentHead)(recurrent[size_t(i / blocks)], j0, std::min(Dv, j0 + kColumns));
  });
  end_state_call(call);
  view_state(ctx, 1, call, {H, Dk, Dv});
  return {};
}

}  // namespace

void register_cpu_gated_delta_rule(OpTable& t) {
  const Kernel* ref = t.kernel("gated_delta_rule", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for gated_delta_rule");
  t.add_kernel(
      "gated_delta_rule", "cpu",
      [reference = *ref](KernelContext& ctx) { return gated_delta_rule_cpu(ctx, reference); }, nullptr, nullptr,
      /*fills=*/true);
}

}  // namespace arch
#endif  // HWY_ONCE

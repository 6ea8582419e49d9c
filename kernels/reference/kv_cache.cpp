// kv_cache(k [seq, KH, D], v [seq, KH, Dv]) -> (k_all [ctx, KH, D], v_all [ctx, KH, Dv]):
// appends this call's rows to a per-session cache (rows [len, len + seq)) and
// returns views of every row held so far. Stateful (a KvCache, kv_cache.h,
// sized once to max_context) and a view op (outputs alias the cache).
// Without v the cache holds k's rows alone and v_all is k_all again: a
// latent cache whose values are the keys' first features (attention's
// value_dim), DeepSeek's compressed kv and rope key.
#include <algorithm>
#include <array>
#include <cstring>
#include <memory>

#include "engine/core/quant.h"
#include "kernels/reference/kv_cache.h"
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

// n values (F32) copied into cache from element `at` on, as the cache
// stores them (F16: rounded to nearest even). Plain pointers: a batched
// step appends 16 sequences' rows in each of 24 layers, and a tensor view
// per piece (its shape allocated) cost more than the copies.
static void append_rows(const float* rows, int64_t n, Tensor& cache, int64_t at, RoundToF16 to_f16) {
  if (cache.dtype == DType::F32) {
    std::memcpy(cache.f32() + at, rows, size_t(n) * sizeof(float));
    return;
  }
  auto* dst = static_cast<uint16_t*>(cache.data) + at;
  if (to_f16) return to_f16(rows, n, dst);
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(rows[i]);
}

bool KvCache::copy_rows(int64_t from, int64_t to, int64_t n) {
  if (from < 0 || to < 0 || n < 0 || from + n > capacity() || to + n > capacity()) return false;
  for (Tensor* t : {&k, &v}) {
    if (t->shape.empty()) continue;
    const size_t row = t->nbytes() / size_t(t->shape[0]);
    auto* base = static_cast<char*>(t->data);
    std::memmove(base + size_t(to) * row, base + size_t(from) * row, size_t(n) * row);
  }
  return true;
}

static Result<std::vector<TypedShape>> kv_cache_shape(std::span<const TypedShape> in,
                                                      std::span<const bool> present, const Attrs&) {
  const Shape& k = in[0].shape;
  const Shape& v = is_present(present, 1) ? in[1].shape : in[0].shape;  // none: the keys again
  auto names = [&] { return "k " + shape_str(k) + ", v " + shape_str(v); };
  if (k.size() != 3 || v.size() != 3)
    return error("kv_cache: k and v must be [seq, kv_heads, head_dim], got " + names());
  if (k[0] != v[0] || k[1] != v[1])
    return error("kv_cache: k and v must agree in seq and kv heads, got " + names());
  if (!k[1].concrete() || !k[2].concrete() || !v[2].concrete())
    return error("kv_cache: kv heads and head dims must be concrete, got " + names());
  return std::vector<TypedShape>{{DType::F32, {Dim::ctx(), k[1], k[2]}},
                                 {DType::F32, {Dim::ctx(), v[1], v[2]}}};
}

Status kv_cache_append(KernelContext& ctx, DType storage, RoundToF16 to_f16) {
  ARCH_TRY_STATUS(expect_f32(ctx, "kv_cache", 0));
  const bool has_v = ctx.inputs.size() > 1 && ctx.inputs[1].data;  // none: the keys are the values too
  if (has_v) ARCH_TRY_STATUS(expect_f32(ctx, "kv_cache", 1));
  const Tensor& K = ctx.inputs[0];               // [S, KH, D]
  const Tensor& V = has_v ? ctx.inputs[1] : K;   // [S, KH, Dv]
  if (K.shape.size() != 3 || V.shape.size() != 3 || K.dim(0) != V.dim(0) || K.dim(1) != V.dim(1))
    return kernel_error(ctx, "kv_cache", "bad shapes k " + dims_str(K.shape) + ", v " + dims_str(V.shape));
  if (ctx.outputs.size() != 2)
    return kernel_error(ctx, "kv_cache", "expects 2 outputs (k_all, v_all), got " +
                                             std::to_string(ctx.outputs.size()));
  const int64_t S = K.dim(0), KH = K.dim(1), D = K.dim(2), Dv = V.dim(2);
  const SequenceRows* seqs = ctx.sequences;
  if (!ctx.state) {
    if (ctx.max_context <= 0)
      return kernel_error(ctx, "kv_cache", "needs max_context > 0 to size the KV cache, got " +
                                               std::to_string(ctx.max_context));
    auto c = std::make_unique<KvCache>();
    c->k = Tensor::zeros(storage, {ctx.max_context, KH, D});
    if (has_v) c->v = Tensor::zeros(storage, {ctx.max_context, KH, Dv});
    // Several sequences' caches (a server's slots, reused request after
    // request) are made resident now, as the first call sizes them: left
    // to fault in as positions fill, a 0.5B's 16 fresh slots cleared pages
    // for 1.7 ms of every 27 ms decode step (archrun bench-serve --profile:
    // kv_cache 235 ms in the first round of 16 streams, 36 in the next).
    if (seqs) {
      std::memset(c->k.data, 0, c->k.nbytes());
      if (has_v) std::memset(c->v.data, 0, c->v.nbytes());
    }
    ctx.state = std::move(c);
  }
  auto* c = dynamic_cast<KvCache*>(ctx.state.get());
  if (!c) return kernel_error(ctx, "kv_cache", "this op's state is not a KV cache");
  if (c->k.dtype != storage)
    return kernel_error(ctx, "kv_cache", "the KV cache holds " + std::string(dtype_name(c->k.dtype)) +
                                             " rows; this call would add " + std::string(dtype_name(storage)));
  if (c->k.dim(1) != KH || c->k.dim(2) != D || has_v != !c->v.shape.empty() || (has_v && c->v.dim(2) != Dv))
    return kernel_error(ctx, "kv_cache", "k " + dims_str(K.shape) + " / v " + dims_str(V.shape) +
                                             " do not match the KV cache rows " + dims_str(c->k.shape) +
                                             " / " + dims_str(c->v.shape));
  if (seqs) {
    // Each piece's rows into its slot's region at its position; the views
    // are then of every region whole (the attention reads each piece's own).
    const int64_t cap = seqs->slot_capacity;
    for (const auto& piece : seqs->pieces) {
      if (cap <= 0 || piece.position < 0 || piece.position + piece.rows > cap || piece.row + piece.rows > S ||
          (piece.slot + 1) * cap > c->capacity())
        return kernel_error(ctx, "kv_cache", "sequence slot " + std::to_string(piece.slot) + " at position " +
                                                 std::to_string(piece.position) + " + " + std::to_string(piece.rows) +
                                                 " does not fit its region of " + std::to_string(cap) + " positions");
      append_rows(K.f32() + piece.row * KH * D, piece.rows * KH * D, c->k, (piece.slot * cap + piece.position) * KH * D,
                  to_f16);
      if (has_v)
        append_rows(V.f32() + piece.row * KH * Dv, piece.rows * KH * Dv, c->v,
                    (piece.slot * cap + piece.position) * KH * Dv, to_f16);
    }
    c->len = c->capacity();
  } else {
    if (c->len + S > c->capacity())
      return kernel_error(ctx, "kv_cache", "KV cache full: " + std::to_string(c->capacity()) +
                                               " positions (holds " + std::to_string(c->len) +
                                               ", this call adds " + std::to_string(S) + ")");
    // cache.k[len : len + S] = k; cache.v[len : len + S] = v; len += S
    append_rows(K.f32(), K.numel(), c->k, c->len * KH * D, to_f16);
    if (has_v) append_rows(V.f32(), V.numel(), c->v, c->len * KH * Dv, to_f16);
    c->len += S;
  }
  // k_all = cache.k[: len]; v_all = cache.v[: len]  (views sharing the buffers' owners)
  // Set in place: the outputs' shape storage is the caller's, reused.
  auto view = [&](Tensor& out, const Tensor& cache, int64_t width) {
    out.dtype = storage;
    out.shape.assign({c->len, KH, width});
    out.data = cache.data;
    out.owner = cache.owner;
    out.mapped = false;
  };
  view(ctx.outputs[0], c->k, D);
  view(ctx.outputs[1], has_v ? c->v : c->k, Dv);
  return {};
}

Status attention_per_sequence(KernelContext& ctx, const Kernel& one, bool across_threads) {
  const SequenceRows& seqs = *ctx.sequences;
  if (ctx.inputs.size() < 3 || (ctx.inputs.size() > 3 && ctx.inputs[3].data))
    return kernel_error(ctx, "attention", "several sequences' rows take no bias");
  const bool groups = ctx.inputs.size() > 4 && ctx.inputs[4].data;
  // Over a KV cache: causal, each piece's region up to its positions; over
  // held values (an encoder's output): unmasked, each slot's rows whole.
  const bool held = seqs.over_held;
  if (attr_bool(ctx.attrs, "causal", true) == held)
    return kernel_error(ctx, "attention", held ? "several sequences' rows attend over their held keys unmasked only"
                                               : "several sequences' rows attend causally over their KV caches only");
  const Tensor& Q = ctx.inputs[0];
  const Tensor& K = ctx.inputs[1];
  const Tensor& V = ctx.inputs[2];
  Tensor& out = ctx.outputs[0];
  if (Q.shape.size() != 3 || K.shape.size() != 3 || V.shape.size() != 3 || out.shape.size() != 3)
    return kernel_error(ctx, "attention", "bad shapes q " + dims_str(Q.shape) + ", k " + dims_str(K.shape));
  const int64_t cap = seqs.slot_capacity;
  // A view of rows [from, from + n) of t (any element type: the cache may be F16).
  auto rows = [](const Tensor& t, int64_t from, int64_t n) {
    const int64_t row = t.shape[1] * t.shape[2];
    const size_t width = t.dtype == DType::F16 ? 2 : 4;
    return Tensor::view(t.dtype, {n, t.shape[1], t.shape[2]},
                        static_cast<char*>(const_cast<void*>(t.data)) + size_t(from * row) * width, t.owner);
  };
  // The keys piece p reads: rows [from, from + n) of K and V.
  auto keys_of = [&](const SequenceRows::Piece& p) -> std::pair<int64_t, int64_t> {
    if (!held) return {p.slot * cap, p.position + p.rows};
    if (size_t(p.slot) >= seqs.held.size()) return {0, -1};
    return {seqs.held[size_t(p.slot)].from, seqs.held[size_t(p.slot)].length};
  };
  int64_t most_rows = 0;
  for (const auto& piece : seqs.pieces) {
    const auto [from, n] = keys_of(piece);
    if (piece.row < 0 || piece.rows < 0 || piece.position < 0 || piece.slot < 0 || piece.row + piece.rows > Q.dim(0) ||
        from < 0 || n < 1 || from + n > K.dim(0) || K.dim(0) != V.dim(0) || (!held && n > cap))
      return kernel_error(ctx, "attention", "sequence slot " + std::to_string(piece.slot) + " rows [" +
                                                std::to_string(piece.row) + ", +" + std::to_string(piece.rows) +
                                                ") do not fit q " + dims_str(Q.shape) + ", k " + dims_str(K.shape));
    most_rows = std::max(most_rows, piece.rows);
  }
  auto run_piece = [&](const SequenceRows::Piece& piece) {
    const auto [from, n] = keys_of(piece);
    std::vector<Tensor> ins{rows(Q, piece.row, piece.rows), rows(K, from, n), rows(V, from, n)};
    if (groups)  // the piece's own rows' groups (an image's tokens within its sequence)
      ins.push_back(Tensor{}), ins.push_back(Tensor::view(DType::I32, {piece.rows},
                                                          const_cast<int32_t*>(ctx.inputs[4].i32()) + piece.row,
                                                          ctx.inputs[4].owner));
    std::vector<Tensor> outs{rows(out, piece.row, piece.rows)};
    std::unique_ptr<OpState> none;
    KernelContext sub{ctx.attrs, ins, outs, none, ctx.max_context, ctx.where, ctx.options, nullptr};
    return one(sub);
  };
  const int64_t n = int64_t(seqs.pieces.size());
  // A prompt among the pieces keeps every thread for itself.
  if (!across_threads || n < 2 || most_rows > 4) {
    for (const auto& piece : seqs.pieces) ARCH_TRY_STATUS(run_piece(piece));
    return {};
  }
  std::vector<Status> status(static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t i = 0; i < n; ++i) status[size_t(i)] = run_piece(seqs.pieces[size_t(i)]);
  for (const Status& s : status) ARCH_TRY_STATUS(s);
  return {};
}

// Some kv heads: the same of k and v, and of both outputs.
static Result<SplitAnswer> kv_cache_split(const SplitQuery& q) {
  if (q.want[0].axis != 1 || q.want.size() != 2 || q.want[1] != q.want[0])
    return error("kv_cache: only a part of its heads, the same of keys and values, is defined");
  return SplitAnswer{{q.want[0], q.present[1] ? q.want[0] : Part::whole()}, q.attrs};
}

static Status kv_cache_kernel(KernelContext& ctx) { return kv_cache_append(ctx, DType::F32); }

void define_kv_cache(OpTable& t) {
  t.define(checked(OpDef{
               .name = "kv_cache",
               .inputs = {"k", "v?"},
               .attrs = {},
               .num_outputs = 2,
               .shape = kv_cache_shape,
               .tolerance = {1e-6, 1e-6},
               .stateful = true,
               .sequences = true,
               .view = true,
               .split = kv_cache_split,
               .doc = "kv_cache(k [seq, KH, D], v? [seq, KH, Dv]) -> (k_all [ctx, KH, D], v_all [ctx, KH, Dv]): append this step's rows to the session's cache, return views of every row held (no v: k's rows alone, v_all = k_all)",
           }),
           kv_cache_kernel);
}

}  // namespace arch

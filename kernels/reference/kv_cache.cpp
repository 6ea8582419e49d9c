// kv_cache(k [seq, KH, D], v [seq, KH, Dv]) -> (k_all [ctx, KH, D], v_all [ctx, KH, Dv]):
// appends this call's rows to a per-session cache (rows [len, len + seq)) and
// returns views of every row held so far. Stateful (a KvCache, kv_cache.h,
// sized once to max_context) and a view op (outputs alias the cache).
#include <cstring>
#include <memory>

#include "core/quant.h"
#include "kernels/reference/kv_cache.h"
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

// rows (F32) copied into cache from element `at` on, as the cache stores
// them (F16: rounded to nearest even).
static void append_rows(const Tensor& rows, Tensor& cache, int64_t at) {
  const int64_t n = rows.numel();
  if (cache.dtype == DType::F32) {
    std::memcpy(cache.f32() + at, rows.f32(), size_t(n) * sizeof(float));
    return;
  }
  auto* dst = static_cast<uint16_t*>(cache.data) + at;
  for (int64_t i = 0; i < n; ++i) dst[i] = f32_to_f16(rows.f32()[i]);
}

static Result<std::vector<TypedShape>> kv_cache_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                      const Attrs&) {
  const Shape& k = in[0].shape;
  const Shape& v = in[1].shape;
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

Status kv_cache_append(KernelContext& ctx, DType storage) {
  ARCH_TRY_STATUS(expect_f32(ctx, "kv_cache", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "kv_cache", 1));
  const Tensor& K = ctx.inputs[0];  // [S, KH, D]
  const Tensor& V = ctx.inputs[1];  // [S, KH, Dv]
  if (K.shape.size() != 3 || V.shape.size() != 3 || K.dim(0) != V.dim(0) || K.dim(1) != V.dim(1))
    return kernel_error(ctx, "kv_cache", "bad shapes k " + dims_str(K.shape) + ", v " + dims_str(V.shape));
  if (ctx.outputs.size() != 2)
    return kernel_error(ctx, "kv_cache", "expects 2 outputs (k_all, v_all), got " +
                                             std::to_string(ctx.outputs.size()));
  const int64_t S = K.dim(0), KH = K.dim(1), D = K.dim(2), Dv = V.dim(2);
  if (!ctx.state) {
    if (ctx.max_context <= 0)
      return kernel_error(ctx, "kv_cache", "needs max_context > 0 to size the KV cache, got " +
                                               std::to_string(ctx.max_context));
    auto c = std::make_unique<KvCache>();
    c->k = Tensor::zeros(storage, {ctx.max_context, KH, D});
    c->v = Tensor::zeros(storage, {ctx.max_context, KH, Dv});
    ctx.state = std::move(c);
  }
  auto* c = dynamic_cast<KvCache*>(ctx.state.get());
  if (!c) return kernel_error(ctx, "kv_cache", "this op's state is not a KV cache");
  if (c->k.dtype != storage)
    return kernel_error(ctx, "kv_cache", "the KV cache holds " + std::string(dtype_name(c->k.dtype)) +
                                             " rows; this call would add " + std::string(dtype_name(storage)));
  if (c->k.dim(1) != KH || c->k.dim(2) != D || c->v.dim(2) != Dv)
    return kernel_error(ctx, "kv_cache", "k " + dims_str(K.shape) + " / v " + dims_str(V.shape) +
                                             " do not match the KV cache rows " + dims_str(c->k.shape) +
                                             " / " + dims_str(c->v.shape));
  if (c->len + S > c->capacity())
    return kernel_error(ctx, "kv_cache", "KV cache full: " + std::to_string(c->capacity()) +
                                             " positions (holds " + std::to_string(c->len) +
                                             ", this call adds " + std::to_string(S) + ")");
  // cache.k[len : len + S] = k; cache.v[len : len + S] = v; len += S
  append_rows(K, c->k, c->len * KH * D);
  append_rows(V, c->v, c->len * KH * Dv);
  c->len += S;
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
  view(ctx.outputs[1], c->v, Dv);
  return {};
}

static Status kv_cache_kernel(KernelContext& ctx) { return kv_cache_append(ctx, DType::F32); }

void define_kv_cache(OpTable& t) {
  t.define(checked(OpDef{
               .name = "kv_cache",
               .inputs = {"k", "v"},
               .attrs = {},
               .num_outputs = 2,
               .shape = kv_cache_shape,
               .tolerance = {1e-6, 1e-6},
               .stateful = true,
               .view = true,
               .doc = "kv_cache(k [seq, KH, D], v [seq, KH, Dv]) -> (k_all [ctx, KH, D], v_all [ctx, KH, Dv]): append this step's rows to the session's cache, return views of every row held",
           }),
           kv_cache_kernel);
}

}  // namespace arch

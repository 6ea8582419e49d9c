// attention(q [seq, H, D], k [seq, KH, D], v [seq, KH, Dv]) -> [seq, H, Dv]:
// softmax(scale * q k^T, masked) v per head, query head h reading kv head
// h / (H / KH). With `cache`, this call's k/v rows are appended to a KvCache
// and the queries (at positions len..len+seq-1) attend to every cached row.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "kernels/reference/kv_cache.h"
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> attention_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                const Attrs& attrs) {
  const Shape& q = in[0].shape;
  const Shape& k = in[1].shape;
  const Shape& v = in[2].shape;
  auto names = [&] { return "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v); };
  if (q.size() != 3 || k.size() != 3 || v.size() != 3)
    return error("attention: q, k, v must be [seq, heads, head_dim], got " + names());
  if (k[0] != v[0] || k[1] != v[1])
    return error("attention: k and v must agree in seq and kv heads, got " + names());
  if (q[2] != k[2]) return error("attention: q and k head_dim differ, got " + names());
  bool causal = attr_bool(attrs, "causal", true);
  bool cache = attr_bool(attrs, "cache", false);
  // Cross-attention (non-causal, no cache) may have as many keys as it likes.
  if ((causal || cache) && q[0] != k[0])
    return error("attention: q and k must have the same seq length (causal or cached), got " + names());
  if (!q[1].concrete() || !k[1].concrete() || k[1].n <= 0 || q[1].n % k[1].n != 0)
    return error("attention: query heads " + dim_str(q[1]) + " must be a multiple of kv heads " +
                 dim_str(k[1]) + " (" + names() + ")");
  if (attr_int(attrs, "window", 0) < 0) return error("attention: window must be >= 0");
  if (attr_float(attrs, "softcap", 0.0) < 0) return error("attention: softcap must be >= 0");
  return one_output(Shape{q[0], q[1], v[2]});
}

// Whether the query at position i sees the key at position j.
bool visible(int64_t i, int64_t j, bool causal, int64_t window) {
  if (causal && j > i) return false;
  if (window > 0) {
    if (causal) return j > i - window;          // i - window < j <= i
    return std::abs(i - j) < window;            // non-causal: |i - j| < window
  }
  return true;
}

// Append this call's k/v rows to the cache (created on the first call).
Status append_to_cache(KernelContext& ctx, const Tensor& K, const Tensor& V, KvCache** out) {
  int64_t S = K.dim(0), KH = K.dim(1), D = K.dim(2), Dv = V.dim(2);
  if (!ctx.state) {
    if (ctx.max_context <= 0)
      return kernel_error(ctx, "attention", "a cached attention needs max_context > 0 to size its KV cache");
    auto c = std::make_unique<KvCache>();
    c->k = Tensor::zeros(DType::F32, {ctx.max_context, KH, D});
    c->v = Tensor::zeros(DType::F32, {ctx.max_context, KH, Dv});
    ctx.state = std::move(c);
  }
  auto* c = dynamic_cast<KvCache*>(ctx.state.get());
  if (!c) return kernel_error(ctx, "attention", "this op's state is not a KV cache");
  if (c->k.dim(1) != KH || c->k.dim(2) != D || c->v.dim(2) != Dv)
    return kernel_error(ctx, "attention", "k " + dims_str(K.shape) + " / v " + dims_str(V.shape) +
                                              " do not match the KV cache rows " + dims_str(c->k.shape) +
                                              " / " + dims_str(c->v.shape));
  if (c->len + S > c->capacity())
    return kernel_error(ctx, "attention", "KV cache full: " + std::to_string(c->capacity()) +
                                              " positions (holds " + std::to_string(c->len) +
                                              ", this call adds " + std::to_string(S) + ")");
  // cache.k[len : len + S] = k; cache.v[len : len + S] = v
  std::memcpy(c->k.f32() + c->len * KH * D, K.f32(), size_t(S * KH * D) * sizeof(float));
  std::memcpy(c->v.f32() + c->len * KH * Dv, V.f32(), size_t(S * KH * Dv) * sizeof(float));
  *out = c;
  return {};
}

Status attention_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) ARCH_TRY_STATUS(expect_f32(ctx, "attention", i));
  const Tensor& Q = ctx.inputs[0];  // [Sq, H, D]
  const Tensor& K = ctx.inputs[1];  // [Sk, KH, D]
  const Tensor& V = ctx.inputs[2];  // [Sk, KH, Dv]
  const bool causal = attr_bool(ctx.attrs, "causal", true);
  const bool cache = attr_bool(ctx.attrs, "cache", false);
  if (Q.shape.size() != 3 || K.shape.size() != 3 || V.shape.size() != 3 || K.dim(0) != V.dim(0) ||
      K.dim(1) != V.dim(1) || Q.dim(2) != K.dim(2) || K.dim(1) <= 0 || Q.dim(1) % K.dim(1) != 0 ||
      ((causal || cache) && Q.dim(0) != K.dim(0)))
    return kernel_error(ctx, "attention", "bad shapes q " + dims_str(Q.shape) + ", k " + dims_str(K.shape) +
                                              ", v " + dims_str(V.shape));
  const int64_t Sq = Q.dim(0), H = Q.dim(1), D = Q.dim(2), KH = K.dim(1), Dv = V.dim(2);
  ARCH_TRY_STATUS(expect_output(ctx, "attention", 0, Dims{Sq, H, Dv}));

  // The keys this call attends to: this call's rows, or the whole cache.
  const float* keys = K.f32();    // [Nk, KH, D]
  const float* values = V.f32();  // [Nk, KH, Dv]
  int64_t past = 0;               // absolute position of the first query
  int64_t Nk = K.dim(0);
  KvCache* c = nullptr;
  if (cache) {
    ARCH_TRY_STATUS(append_to_cache(ctx, K, V, &c));
    keys = c->k.f32();
    values = c->v.f32();
    past = c->len;
    Nk = c->len + Sq;
  }

  const int64_t window = attr_int(ctx.attrs, "window", 0);
  const double scale_attr = attr_float(ctx.attrs, "scale", 0.0);
  const float scale = float(scale_attr != 0.0 ? scale_attr : 1.0 / std::sqrt(double(D)));
  const float softcap = float(attr_float(ctx.attrs, "softcap", 0.0));
  const int64_t group = H / KH;  // query heads per kv head
  std::vector<float> p(static_cast<size_t>(Nk));
  std::vector<char> seen(static_cast<size_t>(Nk));
  for (int64_t i = 0; i < Sq; ++i) {
    const int64_t pos = past + i;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / group;
      const float* q = Q.f32() + (i * H + h) * D;
      // s_j = softcap(scale * q . k_j) for each visible key j
      float mx = -INFINITY;
      for (int64_t j = 0; j < Nk; ++j) {
        seen[j] = visible(pos, j, causal, window);
        if (!seen[j]) continue;
        const float* k = keys + (j * KH + g) * D;
        float dot = 0.0f;
        for (int64_t e = 0; e < D; ++e) dot += q[e] * k[e];
        float s = dot * scale;
        if (softcap > 0.0f) s = std::tanh(s / softcap) * softcap;
        p[j] = s;
        mx = std::max(mx, s);
      }
      // p_j = exp(s_j - max) / sum, over the visible keys only
      double sum = 0.0;
      for (int64_t j = 0; j < Nk; ++j)
        if (seen[j]) sum += p[j] = std::exp(p[j] - mx);
      float* out = ctx.outputs[0].f32() + (i * H + h) * Dv;
      std::fill(out, out + Dv, 0.0f);
      if (sum == 0.0) continue;  // no visible key: zeros
      const float total = float(sum);
      // out = sum_j p_j v_j
      for (int64_t j = 0; j < Nk; ++j) {
        if (!seen[j]) continue;
        const float w = p[j] / total;
        const float* v = values + (j * KH + g) * Dv;
        for (int64_t e = 0; e < Dv; ++e) out[e] += w * v[e];
      }
    }
  }
  if (c) c->len += Sq;
  return {};
}

}  // namespace

void define_attention(OpTable& t) {
  t.define(checked(OpDef{
               .name = "attention",
               .inputs = {"q", "k", "v"},
               .attrs = {{"causal", AttrSpec::Bool, true},
                         {"window", AttrSpec::Int, 0},
                         {"scale", AttrSpec::Float, 0.0},
                         {"softcap", AttrSpec::Float, 0.0},
                         {"cache", AttrSpec::Bool, false}},
               .shape = attention_shape,
               .tolerance = {1e-5, 1e-6},
               .stateful = true,
               .doc = "attention(q [seq, H, D], k [seq, KH, D], v [seq, KH, Dv]) -> [seq, H, Dv]: softmax(scale q k^T, causal/window mask) v, GQA, optional KV cache",
           }),
           attention_kernel);
}

}  // namespace arch

// attention(q [S, H, D], k [T, KH, D], v [T, KH, Dv], bias? [H, S, T],
// groups? i32 [S]) -> [S, H, Dv]: softmax(scale * q k^T + bias, masked) v per head (the
// bias added after scale and softcap: T5's relative position bias), query head h reading kv head
// h / (H / KH). The queries are the last S of the T key positions: query row
// r sits at absolute position T - S + r, key j at position j (with k, v from
// kv_cache, T is every position held so far). The causal and window masks
// apply to those absolute positions. `groups` lifts them within a run of
// the call's rows: a query whose group is g > 0 also sees every key among
// the call's rows in group g, later ones too (Gemma 3's image tokens
// attend to their whole image: transformers' token_type_ids mask, or-ed
// with the causal and sliding ones).
#include <algorithm>
#include <cmath>

#include "kernels/reference/kv_cache.h"
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> attention_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                                const Attrs& attrs) {
  const Shape& q = in[0].shape;
  const Shape& k = in[1].shape;
  const Shape& v = in[2].shape;
  auto names = [&] { return "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v); };
  if (q.size() != 3 || k.size() != 3 || v.size() != 3)
    return error("attention: q, k, v must be [seq, heads, head_dim], got " + names());
  if (k[0] != v[0] || k[1] != v[1])
    return error("attention: k and v must agree in length and kv heads, got " + names());
  if (q[2] != k[2]) return error("attention: q and k head_dim differ, got " + names());
  // Causal: the queries are the last S of the T keys, so T >= S: the same dim,
  // `ctx` (every cached position), or a concrete T (checked against S at run
  // time when S is not concrete). Non-causal (cross-attention): any T.
  if (attr_bool(attrs, "causal", true)) {
    const Dim S = q[0], T = k[0];
    bool ok = T == S || T == Dim::ctx() || (T.concrete() && (!S.concrete() || T.n >= S.n));
    if (!ok)
      return error("attention: causal attention needs as many keys as queries or more (k length " +
                   dim_str(T) + " is not " + dim_str(S) + ", ctx, or a concrete length >= it), got " +
                   names());
  }
  // `_` heads (windows and heads as one axis, of an image of any size) are
  // checked when the call's shapes are known.
  const bool per_call = q[1] == Dim::dyn() || k[1] == Dim::dyn();
  if (!per_call && (!q[1].concrete() || !k[1].concrete() || k[1].n <= 0 || q[1].n % k[1].n != 0))
    return error("attention: query heads " + dim_str(q[1]) + " must be a multiple of kv heads " +
                 dim_str(k[1]) + " (" + names() + ")");
  if (in.size() > 3 && is_present(present, 3)) {
    const Shape& b = in[3].shape;
    if (in[3].dtype != DType::F32 || b.size() != 3 || b[0] != q[1] || b[1] != q[0] || b[2] != k[0])
      return error("attention: bias must be f32 [heads, q length, k length] = [" + dim_str(q[1]) + ", " +
                   dim_str(q[0]) + ", " + dim_str(k[0]) + "], got " + shape_str(b) + " (" + names() + ")");
  }
  if (in.size() > 4 && is_present(present, 4)) {
    const Shape& g = in[4].shape;
    if (in[4].dtype != DType::I32 || g.size() != 1 || g[0] != q[0])
      return error("attention: groups must be i32 [q length] = [" + dim_str(q[0]) + "], got " + shape_str(g) + " (" +
                   names() + ")");
  }
  if (attr_int(attrs, "window", 0) < 0) return error("attention: window must be >= 0");
  if (attr_float(attrs, "softcap", 0.0) < 0) return error("attention: softcap must be >= 0");
  const int64_t value_dim = attr_int(attrs, "value_dim", 0);
  if (value_dim < 0 || (value_dim > 0 && v[2].concrete() && value_dim > v[2].n))
    return error("attention: value_dim " + std::to_string(value_dim) + " must be in 1.." + dim_str(v[2]) +
                 " (v's head_dim), or 0 for all of it (" + names() + ")");
  return one_output(Shape{q[0], q[1], value_dim > 0 ? Dim::of(value_dim) : v[2]});
}

// Whether the query at absolute position i sees the key at position j.
bool visible(int64_t i, int64_t j, bool causal, int64_t window) {
  if (causal && j > i) return false;
  if (window > 0) {
    if (causal) return j > i - window;          // i - window < j <= i
    return std::abs(i - j) < window;            // non-causal: |i - j| < window
  }
  return true;
}

Status attention_kernel(KernelContext& ctx) {
  if (ctx.sequences) return attention_per_sequence(ctx, attention_kernel);
  for (size_t i = 0; i < 3; ++i) ARCH_TRY_STATUS(expect_f32(ctx, "attention", i));
  const Tensor& Q = ctx.inputs[0];  // [S, H, D]
  const Tensor& K = ctx.inputs[1];  // [T, KH, D]
  const Tensor& V = ctx.inputs[2];  // [T, KH, Dv]
  const bool causal = attr_bool(ctx.attrs, "causal", true);
  if (Q.shape.size() != 3 || K.shape.size() != 3 || V.shape.size() != 3 || K.dim(0) != V.dim(0) ||
      K.dim(1) != V.dim(1) || Q.dim(2) != K.dim(2) || K.dim(1) <= 0 || Q.dim(1) % K.dim(1) != 0)
    return kernel_error(ctx, "attention", "bad shapes q " + dims_str(Q.shape) + ", k " + dims_str(K.shape) +
                                              ", v " + dims_str(V.shape));
  // The values: the first value_dim features of each of v's rows (width Vw).
  const int64_t S = Q.dim(0), H = Q.dim(1), D = Q.dim(2), T = K.dim(0), KH = K.dim(1), Vw = V.dim(2);
  const int64_t value_dim = attr_int(ctx.attrs, "value_dim", 0);
  if (value_dim < 0 || value_dim > Vw)
    return kernel_error(ctx, "attention", "value_dim " + std::to_string(value_dim) + " is past v's " + std::to_string(Vw));
  const int64_t Dv = value_dim > 0 ? value_dim : Vw;
  if (causal && T < S)
    return kernel_error(ctx, "attention", "causal attention with " + std::to_string(S) +
                                              " queries needs at least as many keys, got " +
                                              std::to_string(T) + " (q " + dims_str(Q.shape) + ", k " +
                                              dims_str(K.shape) + ")");
  ARCH_TRY_STATUS(expect_output(ctx, "attention", 0, Dims{S, H, Dv}));
  const bool has_bias = ctx.inputs.size() > 3 && ctx.inputs[3].data;
  if (has_bias && ctx.inputs[3].shape != Dims{H, S, T})
    return kernel_error(ctx, "attention", "bias " + dims_str(ctx.inputs[3].shape) + " is not [H, S, T] = " +
                                              dims_str(Dims{H, S, T}));
  const float* bias = has_bias ? ctx.inputs[3].f32() : nullptr;
  const bool has_groups = ctx.inputs.size() > 4 && ctx.inputs[4].data;
  if (has_groups && (ctx.inputs[4].dtype != DType::I32 || ctx.inputs[4].shape != Dims{S}))
    return kernel_error(ctx, "attention", "groups " + dims_str(ctx.inputs[4].shape) + " are not i32 [" + std::to_string(S) + "]");
  const int32_t* groups = has_groups ? ctx.inputs[4].i32() : nullptr;

  const int64_t past = T - S;  // absolute position of the first query
  const int64_t window = attr_int(ctx.attrs, "window", 0);
  const double scale_attr = attr_float(ctx.attrs, "scale", 0.0);
  const float scale = float(scale_attr != 0.0 ? scale_attr : 1.0 / std::sqrt(double(D)));
  const float softcap = float(attr_float(ctx.attrs, "softcap", 0.0));
  const int64_t group = H / KH;  // query heads per kv head
  std::vector<float> p(static_cast<size_t>(T));
  std::vector<char> seen(static_cast<size_t>(T));
  for (int64_t r = 0; r < S; ++r) {
    const int64_t pos = past + r;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / group;
      const float* q = Q.f32() + (r * H + h) * D;
      // s_j = softcap(scale * q . k_j) for each visible key j
      float mx = -INFINITY;
      for (int64_t j = 0; j < T; ++j) {
        seen[j] = visible(pos, j, causal, window) ||
                  (groups && groups[r] > 0 && j >= past && groups[j - past] == groups[r]);
        if (!seen[j]) continue;
        const float* k = K.f32() + (j * KH + g) * D;
        float dot = 0.0f;
        for (int64_t e = 0; e < D; ++e) dot += q[e] * k[e];
        float s = dot * scale;
        if (softcap > 0.0f) s = std::tanh(s / softcap) * softcap;
        if (bias) s += bias[(h * S + r) * T + j];
        p[j] = s;
        mx = std::max(mx, s);
      }
      // p_j = exp(s_j - max) / sum, over the visible keys only
      double sum = 0.0;
      for (int64_t j = 0; j < T; ++j)
        if (seen[j]) sum += p[j] = std::exp(p[j] - mx);
      float* out = ctx.outputs[0].f32() + (r * H + h) * Dv;
      std::fill(out, out + Dv, 0.0f);
      if (sum == 0.0) continue;  // no visible key: zeros
      const float total = float(sum);
      // out = sum_j p_j v_j
      for (int64_t j = 0; j < T; ++j) {
        if (!seen[j]) continue;
        const float w = p[j] / total;
        const float* v = V.f32() + (j * KH + g) * Vw;
        for (int64_t e = 0; e < Dv; ++e) out[e] += w * v[e];
      }
    }
  }
  return {};
}

// Some query heads: q's and the bias's ranges of heads, and the kv heads
// they read (h / (H / KH)), so long as the heads held read them in the same
// pattern (every local query head i reading local kv head i / (Hl / KHl)).
Result<SplitAnswer> attention_split(const SplitQuery& q) {
  if (q.want.size() != 1 || q.want[0].axis != 1) return error("attention: only a part of its heads is defined");
  const Part& want = q.want[0];
  const Shape& qs = q.in[0].shape;
  const Shape& ks = q.in[1].shape;
  if (!qs[1].concrete() || !ks[1].concrete() || qs[1].n % ks[1].n) return error("attention: heads not concrete");
  ARCH_TRY(Part kv, grouped_heads(want, qs[1].n / ks[1].n, "attention"));
  SplitAnswer a{{want, kv, kv}, q.attrs};
  const bool per_head_bias = q.present.size() > 3 && q.present[3] && q.in[3].shape[0] == qs[1];
  if (q.in.size() > 3) a.inputs.push_back(per_head_bias ? Part{0, want.ranges} : Part::whole());
  if (q.in.size() > 4) a.inputs.push_back(Part::whole());
  return a;
}

}  // namespace

void define_attention(OpTable& t) {
  t.define(checked(OpDef{
               .name = "attention",
               .inputs = {"q", "k", "v", "bias?", "groups?"},
               .attrs = {{"causal", AttrSpec::Bool, true},
                         {"window", AttrSpec::Int, 0},
                         {"scale", AttrSpec::Float, 0.0},
                         {"softcap", AttrSpec::Float, 0.0},
                         {"value_dim", AttrSpec::Int, 0}},
               .shape = attention_shape,
               .tolerance = {1e-5, 1e-6},
               .split = attention_split,
               .doc = "attention(q [S, H, D], k [T, KH, D], v [T, KH, Dv], bias? [H, S, T], groups? i32 [S]) -> [S, H, Dv]: softmax(scale q k^T + bias, causal/window mask, lifted within a group of the call's rows) v, GQA; the queries are the last S of the T positions; value_dim: only v's first value_dim features (a latent cache whose keys hold the values)",
           }),
           attention_kernel);
}

}  // namespace arch

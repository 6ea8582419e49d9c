// relative_attention(q [S, H, D], k [S, H, D], v [S, H, Dv], rel_k [2W+1, D],
// rel_v [2W+1, Dv]) attr scale -> [S, H, Dv]: bidirectional self-attention
// with windowed relative positions (Shaw et al. 2018), as VITS' text
// encoder has it: query i's score for key j adds scale q_i . rel_k[j - i + W]
// and its output adds sum_j p_ij rel_v[j - i + W], both only for |j - i| <= W
// (the tables shared by the heads). scale 0: 1/sqrt(D). Arithmetic in
// double.
#include <cmath>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> relative_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs&) {
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape, &rk = in[3].shape, &rv = in[4].shape;
  auto names = [&] {
    return "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v) + ", rel_k " + shape_str(rk) +
           ", rel_v " + shape_str(rv);
  };
  if (q.size() != 3 || k != q || v.size() != 3 || v[0] != q[0] || v[1] != q[1])
    return error("relative_attention: q, k must be [seq, heads, head_dim] and v [seq, heads, v_dim] alike, got " +
                 names());
  if (rk.size() != 2 || rv.size() != 2 || rk[0] != rv[0] || rk[1] != q[2] || rv[1] != v[2] || !rk[0].concrete() ||
      rk[0].n % 2 != 1)
    return error("relative_attention: rel_k must be [2 window + 1, head_dim], rel_v [2 window + 1, v_dim], got " +
                 names());
  return one_output(v);
}

Status relative_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 5; ++i) ARCH_TRY_STATUS(expect_f32(ctx, "relative_attention", i));
  const Tensor &Q = ctx.inputs[0], &K = ctx.inputs[1], &V = ctx.inputs[2], &RK = ctx.inputs[3], &RV = ctx.inputs[4];
  if (Q.shape.size() != 3 || K.shape != Q.shape || V.shape.size() != 3 || V.shape[0] != Q.shape[0] ||
      V.shape[1] != Q.shape[1] || RK.shape.size() != 2 || RK.shape[1] != Q.shape[2] || RV.shape.size() != 2 ||
      RV.shape[0] != RK.shape[0] || RV.shape[1] != V.shape[2] || RK.shape[0] % 2 != 1)
    return kernel_error(ctx, "relative_attention", "q, k, v, rel_k, rel_v do not fit together");
  ARCH_TRY_STATUS(expect_output(ctx, "relative_attention", 0, V.shape));
  const int64_t S = Q.shape[0], H = Q.shape[1], D = Q.shape[2], Dv = V.shape[2], W = (RK.shape[0] - 1) / 2;
  double scale = attr_float(ctx.attrs, "scale", 0.0);
  if (scale == 0) scale = 1.0 / std::sqrt(double(D));
  const float *q = Q.f32(), *k = K.f32(), *v = V.f32(), *rk = RK.f32(), *rv = RV.f32();
  float* out = ctx.outputs[0].f32();
  std::vector<double> p(static_cast<size_t>(S)), acc(static_cast<size_t>(Dv));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < S; ++i) {
      const float* qi = q + (i * H + h) * D;
      double top = -INFINITY, sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        const float* kj = k + (j * H + h) * D;
        const int64_t r = j - i + W;
        double s = 0;
        for (int64_t d = 0; d < D; ++d) s += double(qi[d]) * (double(kj[d]) + (r >= 0 && r <= 2 * W ? double(rk[r * D + d]) : 0.0));
        p[size_t(j)] = s * scale;
        top = std::max(top, p[size_t(j)]);
      }
      for (int64_t j = 0; j < S; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - top));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < S; ++j) {
        const double pj = p[size_t(j)] / sum;
        const int64_t r = j - i + W;
        for (int64_t d = 0; d < Dv; ++d)
          acc[size_t(d)] += pj * (double(v[(j * H + h) * Dv + d]) + (r >= 0 && r <= 2 * W ? double(rv[r * Dv + d]) : 0.0));
      }
      for (int64_t d = 0; d < Dv; ++d) out[(i * H + h) * Dv + d] = float(acc[size_t(d)]);
    }
  return {};
}

}  // namespace

void define_relative_attention(OpTable& t) {
  t.define(checked(OpDef{
               .name = "relative_attention",
               .inputs = {"q", "k", "v", "rel_k", "rel_v"},
               .attrs = {{"scale", AttrSpec::Float, 0.0}},
               .shape = relative_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "relative_attention(q, k, v [S, H, D], rel_k, rel_v [2W+1, D]) -> [S, H, D]: self-attention with "
                      "windowed relative position keys and values",
           }),
           relative_kernel);
}

}  // namespace arch

// l2_normalize(x [..., D]) attrs eps, axis -> like x: x / max(||x||_2, eps)
// over the last dim (torch.nn.functional.normalize(x, p=2, dim=-1, eps)),
// or over `axis` (dim=axis: a video VAE's norm over the channels of
// [C, T, H, W], axis 0, each position's own). The norm is accumulated in
// double and rounded to float32 before the clamp and divide.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> l2_normalize_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                   const Attrs& attrs) {
  if (in[0].shape.empty()) return error("l2_normalize: x must have at least one dim, got []");
  ARCH_TRY(size_t axis, normalize_axis("l2_normalize", attr_int(attrs, "axis", -1), in[0].shape.size()));
  (void)axis;
  return one_output(in[0].shape);
}

Status l2_normalize_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "l2_normalize", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "l2_normalize", "x must have at least one dim");
  ARCH_TRY_STATUS(expect_output(ctx, "l2_normalize", 0, X.shape));
  auto axis = normalize_axis("l2_normalize", attr_int(ctx.attrs, "axis", -1), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "l2_normalize", axis.error().message);
  const float eps = float(attr_float(ctx.attrs, "eps", 1e-12));
  const auto [outer, along, inner] = around_axis(X.shape, *axis);
  if (inner > 1) {
    // Over a leading axis: each of the inner positions its own norm, the
    // rows along the axis summed position by position (contiguous reads).
    std::vector<double> sq(static_cast<size_t>(inner));
    for (int64_t o = 0; o < outer; ++o) {
      const float* x = X.f32() + o * along * inner;
      float* y = ctx.outputs[0].f32() + o * along * inner;
      std::fill(sq.begin(), sq.end(), 0.0);
      for (int64_t a = 0; a < along; ++a)
        for (int64_t i = 0; i < inner; ++i) sq[size_t(i)] += double(x[a * inner + i]) * double(x[a * inner + i]);
      std::vector<float> denom(static_cast<size_t>(inner));
      for (int64_t i = 0; i < inner; ++i) denom[size_t(i)] = std::max(float(std::sqrt(sq[size_t(i)])), eps);
      for (int64_t a = 0; a < along; ++a)
        for (int64_t i = 0; i < inner; ++i) y[a * inner + i] = x[a * inner + i] / denom[size_t(i)];
    }
    return {};
  }
  const int64_t D = X.dim(-1);
  const int64_t rows = D ? X.numel() / D : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = X.f32() + r * D;
    float* y = ctx.outputs[0].f32() + r * D;
    // y = x / max(sqrt(sum x^2), eps)
    double sq = 0.0;
    for (int64_t i = 0; i < D; ++i) sq += double(x[i]) * double(x[i]);
    const float denom = std::max(float(std::sqrt(sq)), eps);
    for (int64_t i = 0; i < D; ++i) y[i] = x[i] / denom;
  }
  return {};
}

// Over the last dim: any rows apart. Over another axis: only whole.
Result<SplitAnswer> l2_normalize_split(const SplitQuery& q) {
  const int64_t axis = attr_int(q.attrs, "axis", -1);
  if (axis != -1 && axis != int64_t(q.in[0].shape.size()) - 1) return error("l2_normalize: over a leading axis, only whole");
  return split_all_but_last(q);
}

}  // namespace

void define_l2_normalize(OpTable& t) {
  t.define(checked(OpDef{
               .name = "l2_normalize",
               .inputs = {"x"},
               .attrs = {{"eps", AttrSpec::Float, 1e-12}, {"axis", AttrSpec::Int, -1}},
               .shape = l2_normalize_shape,
               .tolerance = {1e-5, 1e-6},
               .split = l2_normalize_split,
               .doc = "l2_normalize(x) -> like x: x / max(||x||_2 over the last dim (or `axis`), eps), F.normalize(x, dim=axis)",
           }),
           l2_normalize_kernel);
}

}  // namespace arch

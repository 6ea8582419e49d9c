// l2_normalize(x [..., D]) attr eps -> like x: x / max(||x||_2, eps) over the
// last dim (torch.nn.functional.normalize(x, p=2, dim=-1, eps)). The norm is
// accumulated in double and rounded to float32 before the clamp and divide.
#include <algorithm>
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> l2_normalize_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                   const Attrs&) {
  if (in[0].shape.empty()) return error("l2_normalize: x must have at least one dim, got []");
  return one_output(in[0].shape);
}

Status l2_normalize_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "l2_normalize", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "l2_normalize", "x must have at least one dim");
  ARCH_TRY_STATUS(expect_output(ctx, "l2_normalize", 0, X.shape));
  const int64_t D = X.dim(-1);
  const int64_t rows = D ? X.numel() / D : 0;
  const float eps = float(attr_float(ctx.attrs, "eps", 1e-12));
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

}  // namespace

void define_l2_normalize(OpTable& t) {
  t.define(checked(OpDef{
               .name = "l2_normalize",
               .inputs = {"x"},
               .attrs = {{"eps", AttrSpec::Float, 1e-12}},
               .shape = l2_normalize_shape,
               .tolerance = {1e-5, 1e-6},
               .split = split_all_but_last,
               .doc = "l2_normalize(x [..., D]) -> like x: x / max(||x||_2 over the last dim, eps), F.normalize(x, dim=-1)",
           }),
           l2_normalize_kernel);
}

}  // namespace arch

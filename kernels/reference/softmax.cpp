// softmax(x [..., D]) -> [..., D]: exp(x - max) / sum(exp(x - max)) over the
// last dim (the sum accumulated in double).
#include <algorithm>
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> softmax_shape(std::span<const TypedShape> in,
                                                     std::span<const bool>, const Attrs&) {
  if (in[0].shape.empty()) return error("softmax: x must have at least one dim, got []");
  return one_output(in[0].shape);
}

static Status softmax_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "softmax", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "softmax", "x must have at least one dim");
  ARCH_TRY_STATUS(expect_output(ctx, "softmax", 0, X.shape));
  int64_t D = X.dim(-1);
  int64_t rows = D ? X.numel() / D : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = X.f32() + r * D;
    float* y = ctx.outputs[0].f32() + r * D;
    // y = exp(x - max(x)) / sum(exp(x - max(x)))
    float mx = x[0];
    for (int64_t i = 1; i < D; ++i) mx = std::max(mx, x[i]);
    double sum = 0.0;
    for (int64_t i = 0; i < D; ++i) sum += y[i] = std::exp(x[i] - mx);
    float total = float(sum);
    for (int64_t i = 0; i < D; ++i) y[i] = y[i] / total;
  }
  return {};
}

void define_softmax(OpTable& t) {
  t.define(checked(OpDef{
               .name = "softmax",
               .inputs = {"x"},
               .attrs = {},
               .shape = softmax_shape,
               .tolerance = {1e-5, 1e-6},
               .split = split_all_but_last,
               .doc = "softmax(x [..., D]) -> [..., D]: exp(x - max) / sum(exp(x - max)) over the last dim",
           }),
           softmax_kernel);
}

}  // namespace arch

// layer_norm(x [..., D], weight? [D], bias? [D]) attr eps -> [..., D]:
// y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance
// (mean and variance accumulated in double, as torch's reduction is exact
// to float32 rounding).
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Status layer_norm_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "layer_norm", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "layer_norm", "x must have at least one dim");
  int64_t D = X.dim(-1);
  const float* wb[2] = {nullptr, nullptr};  // weight, bias
  for (size_t i = 1; i <= 2; ++i) {
    if (!has_input(ctx, i)) continue;
    ARCH_TRY_STATUS(expect_f32(ctx, "layer_norm", i));
    if (ctx.inputs[i].numel() != D)
      return kernel_error(ctx, "layer_norm", std::string(i == 1 ? "weight " : "bias ") +
                                                 dims_str(ctx.inputs[i].shape) +
                                                 " does not match the last dim of x " + dims_str(X.shape));
    wb[i - 1] = ctx.inputs[i].f32();
  }
  ARCH_TRY_STATUS(expect_output(ctx, "layer_norm", 0, X.shape));
  const float* w = wb[0];
  const float* b = wb[1];
  float eps = float(attr_float(ctx.attrs, "eps", 1e-5));
  int64_t rows = D ? X.numel() / D : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = X.f32() + r * D;
    float* y = ctx.outputs[0].f32() + r * D;
    // mean = sum(x) / D; var = sum((x - mean)^2) / D
    double sum = 0.0;
    for (int64_t i = 0; i < D; ++i) sum += x[i];
    double mean = sum / double(D);
    double sq = 0.0;
    for (int64_t i = 0; i < D; ++i) sq += (x[i] - mean) * (x[i] - mean);
    float mean_f = float(mean);
    float rstd = 1.0f / std::sqrt(float(sq / double(D)) + eps);
    // y = (x - mean) * rstd * weight + bias
    for (int64_t i = 0; i < D; ++i) {
      float v = (x[i] - mean_f) * rstd;
      if (w) v = v * w[i];
      if (b) v = v + b[i];
      y[i] = v;
    }
  }
  return {};
}

void define_layer_norm(OpTable& t) {
  t.define(checked(OpDef{
               .name = "layer_norm",
               .inputs = {"x", "weight?", "bias?"},
               .attrs = {{"eps", AttrSpec::Float, 1e-5}},
               .shape = [](std::span<const TypedShape> in, std::span<const bool> present,
                           const Attrs&) { return norm_shape("layer_norm", in, present); },
               .tolerance = {1e-5, 1e-6},
               .split = split_all_but_last,
               .doc = "layer_norm(x [..., D], weight? [D], bias? [D]) -> [..., D]: (x - mean) / sqrt(var + eps) * weight + bias",
           }),
           layer_norm_kernel);
}

}  // namespace arch

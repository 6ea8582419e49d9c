// rms_norm(x [..., D], weight? [D]) attr eps -> [..., D]:
// y = weight * (x * rsqrt(mean(x^2) + eps)), as Hugging Face's RMSNorm
// computes it in float32 (the mean of squares is accumulated in double).
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Status rms_norm_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "rms_norm", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "rms_norm", "x must have at least one dim");
  int64_t D = X.dim(-1);
  const float* w = nullptr;
  if (has_input(ctx, 1)) {
    ARCH_TRY_STATUS(expect_f32(ctx, "rms_norm", 1));
    if (ctx.inputs[1].numel() != D)
      return kernel_error(ctx, "rms_norm", "weight " + dims_str(ctx.inputs[1].shape) +
                                               " does not match the last dim of x " + dims_str(X.shape));
    w = ctx.inputs[1].f32();
  }
  ARCH_TRY_STATUS(expect_output(ctx, "rms_norm", 0, X.shape));
  float eps = float(attr_float(ctx.attrs, "eps", 1e-6));
  int64_t rows = D ? X.numel() / D : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = X.f32() + r * D;
    float* y = ctx.outputs[0].f32() + r * D;
    // variance = mean(x^2); inv = 1 / sqrt(variance + eps)
    double ss = 0.0;
    for (int64_t i = 0; i < D; ++i) ss += double(x[i]) * double(x[i]);
    float variance = float(ss / double(D));
    float inv = 1.0f / std::sqrt(variance + eps);
    // y = weight * (x * inv)
    for (int64_t i = 0; i < D; ++i) y[i] = w ? w[i] * (x[i] * inv) : x[i] * inv;
  }
  return {};
}

void define_rms_norm(OpTable& t) {
  t.define(checked(OpDef{
               .name = "rms_norm",
               .inputs = {"x", "weight?"},
               .attrs = {{"eps", AttrSpec::Float, nullptr}},
               .shape = [](std::span<const TypedShape> in, std::span<const bool> present,
                           const Attrs&) { return norm_shape("rms_norm", in, present); },
               .tolerance = {1e-5, 1e-6},
               .split = split_all_but_last,
               .doc = "rms_norm(x [..., D], weight? [D]) -> [..., D]: weight * x / sqrt(mean(x^2) + eps)",
           }),
           rms_norm_kernel);
}

}  // namespace arch

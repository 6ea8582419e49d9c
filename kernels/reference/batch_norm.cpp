// batch_norm(x [C, ...], weight? [C], bias? [C], running_mean [C],
// running_var [C]) attr eps -> like x: eval-mode batch norm (no batch dim; the
// channel axis is 0), y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c].
// Evaluated as torch's CPU kernel does, in float32: alpha = weight / sqrt(var +
// eps), beta = bias - mean * alpha, y = x * alpha + beta.
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

const char* const kNames[] = {"x", "weight", "bias", "running_mean", "running_var"};

Result<std::vector<TypedShape>> batch_norm_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                                 const Attrs&) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("batch_norm: x must be [C, ...], got []");
  for (size_t i = 1; i < in.size(); ++i) {
    if (!is_present(present, i)) continue;
    if (in[i].shape.size() != 1 || in[i].shape[0] != x[0])
      return error(std::string("batch_norm: ") + kNames[i] + " " + shape_str(in[i].shape) +
                   " does not match the channels (dim 0) of x " + shape_str(x));
  }
  return one_output(x);
}

Status batch_norm_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "batch_norm", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "batch_norm", "x must be [C, ...], got []");
  const int64_t C = X.shape[0];
  const float* p[5] = {};  // weight, bias, running_mean, running_var by input index
  for (size_t i = 1; i < 5; ++i) {
    if ((i == 1 || i == 2) && !has_input(ctx, i)) continue;
    ARCH_TRY_STATUS(expect_f32(ctx, "batch_norm", i));
    if (ctx.inputs[i].shape != Dims{C})
      return kernel_error(ctx, "batch_norm", std::string(kNames[i]) + " " + dims_str(ctx.inputs[i].shape) +
                                                 " does not match the channels (dim 0) of x " + dims_str(X.shape));
    p[i] = ctx.inputs[i].f32();
  }
  ARCH_TRY_STATUS(expect_output(ctx, "batch_norm", 0, X.shape));
  const float eps = float(attr_float(ctx.attrs, "eps", 1e-5));
  const int64_t inner = C ? X.numel() / C : 0;
  for (int64_t c = 0; c < C; ++c) {
    // alpha = weight / sqrt(var + eps); beta = bias - mean * alpha
    const float invstd = 1.0f / std::sqrt(p[4][c] + eps);
    const float alpha = p[1] ? invstd * p[1][c] : invstd;
    const float beta = (p[2] ? p[2][c] : 0.0f) - p[3][c] * alpha;
    const float* x = X.f32() + c * inner;
    float* y = ctx.outputs[0].f32() + c * inner;
    for (int64_t i = 0; i < inner; ++i) y[i] = x[i] * alpha + beta;  // y = x * alpha + beta
  }
  return {};
}

}  // namespace

void define_batch_norm(OpTable& t) {
  t.define(checked(OpDef{
               .name = "batch_norm",
               .inputs = {"x", "weight?", "bias?", "running_mean", "running_var"},
               .attrs = {{"eps", AttrSpec::Float, 1e-5}},
               .shape = batch_norm_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "batch_norm(x [C, ...], weight? [C], bias? [C], running_mean [C], running_var [C]) -> like x: eval-mode (x - mean) / sqrt(var + eps) * weight + bias per channel (axis 0)",
           }),
           batch_norm_kernel);
}

}  // namespace arch

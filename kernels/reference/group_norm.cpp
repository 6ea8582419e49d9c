// group_norm(x [C, ...], weight? [C], bias? [C]) attrs groups, eps -> like x:
// the channels in `groups` equal groups, each normalised over its channels
// and every position, (x - mean) / sqrt(var + eps) (biased variance), then
// per channel * weight + bias, as torch's GroupNorm (mean and variance
// accumulated in double).
#include <cmath>

#include "kernels/reference/group_norm.h"
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

void group_norm_group(const float* X, float* Y, const float* w, const float* b, int64_t C, int64_t per_channel,
                      int64_t groups, int64_t g, float eps) {
  const int64_t per_group = C / groups, n = per_group * per_channel;
  const float* x = X + g * n;
  float* y = Y + g * n;
  // mean and biased variance over the group's channels and positions
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const double mean = sum / double(n);
  double sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float inv = 1.0f / std::sqrt(float(sq / double(n)) + eps);
  const float m = float(mean);
  for (int64_t c = 0; c < per_group; ++c) {
    const int64_t ch = g * per_group + c;
    for (int64_t i = 0; i < per_channel; ++i) {
      float v = (x[c * per_channel + i] - m) * inv;
      if (w) v *= w[ch];
      if (b) v += b[ch];
      y[c * per_channel + i] = v;
    }
  }
}

namespace {

Result<std::vector<TypedShape>> group_norm_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                                 const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty() || !x[0].concrete()) return error("group_norm: x must be [C, ...] with C concrete, got " + shape_str(x));
  const int64_t groups = attr_int(attrs, "groups", 0);
  if (groups <= 0 || x[0].n % groups)
    return error("group_norm: " + std::to_string(groups) + " groups do not divide " + std::to_string(x[0].n) + " channels");
  for (size_t i = 1; i <= 2; ++i)
    if (is_present(present, i) && in[i].shape != Shape{x[0]})
      return error(std::string("group_norm: ") + (i == 1 ? "weight " : "bias ") + shape_str(in[i].shape) +
                   " is not [" + dim_str(x[0]) + "]");
  return one_output(x);
}

Status group_norm_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "group_norm", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "group_norm", "x must be [C, ...]");
  const int64_t C = X.dim(0), groups = attr_int(ctx.attrs, "groups", 0);
  if (groups <= 0 || C % groups) return kernel_error(ctx, "group_norm", "groups must divide the channels");
  const float* w = nullptr;
  const float* b = nullptr;
  for (size_t i = 1; i <= 2; ++i) {
    if (!has_input(ctx, i)) continue;
    ARCH_TRY_STATUS(expect_f32(ctx, "group_norm", i));
    if (ctx.inputs[i].numel() != C) return kernel_error(ctx, "group_norm", "weight and bias must be [C]");
    (i == 1 ? w : b) = ctx.inputs[i].f32();
  }
  ARCH_TRY_STATUS(expect_output(ctx, "group_norm", 0, X.shape));
  const float eps = float(attr_float(ctx.attrs, "eps", 1e-5));
  const int64_t per_channel = C ? X.numel() / C : 0;
  for (int64_t g = 0; g < groups; ++g) group_norm_group(X.f32(), ctx.outputs[0].f32(), w, b, C, per_channel, groups, g, eps);
  return {};
}

}  // namespace

void define_group_norm(OpTable& t) {
  t.define(checked(OpDef{
               .name = "group_norm",
               .inputs = {"x", "weight?", "bias?"},
               .attrs = {{"groups", AttrSpec::Int, nullptr}, {"eps", AttrSpec::Float, 1e-5}},
               .shape = group_norm_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "group_norm(x [C, ...], weight? [C], bias? [C]) -> like x: each of `groups` channel groups "
                      "normalised over its channels and positions, then * weight + bias",
           }),
           group_norm_kernel);
}

}  // namespace arch

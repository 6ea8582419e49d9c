// pad(x [C, H, W]) attr pads [top, bottom, left, right] -> [C, H + top +
// bottom, W + left + right]: zeros around the image, each side its own
// amount (a VAE's Downsample2D pads only right and bottom).
#include <algorithm>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> pad_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const auto p = attr_ints(attrs, "pads");
  const Shape& x = in[0].shape;
  if (p.size() != 4 || *std::min_element(p.begin(), p.end()) < 0)
    return error("pad: pads must be [top, bottom, left, right], each >= 0");
  if (x.size() != 3) return error("pad: x must be [C, H, W], got " + shape_str(x));
  Shape out = x;
  out[1] = x[1].concrete() ? Dim::of(x[1].n + p[0] + p[1]) : Dim::dyn();
  out[2] = x[2].concrete() ? Dim::of(x[2].n + p[2] + p[3]) : Dim::dyn();
  return one_output(out);
}

Status pad_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "pad", 0));
  const Tensor& X = ctx.inputs[0];
  const auto p = attr_ints(ctx.attrs, "pads");
  if (X.shape.size() != 3 || p.size() != 4) return kernel_error(ctx, "pad", "x must be [C, H, W] and pads 4 numbers");
  const int64_t C = X.dim(0), H = X.dim(1), W = X.dim(2), Ho = H + p[0] + p[1], Wo = W + p[2] + p[3];
  ARCH_TRY_STATUS(expect_output(ctx, "pad", 0, Dims{C, Ho, Wo}));
  float* y = ctx.outputs[0].f32();
  std::fill(y, y + C * Ho * Wo, 0.0f);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H; ++i)
      std::copy(X.f32() + (c * H + i) * W, X.f32() + (c * H + i + 1) * W, y + (c * Ho + i + p[0]) * Wo + p[2]);
  return {};
}

Result<std::vector<TypedShape>> clamp_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  if (attr_float(attrs, "min", 0) > attr_float(attrs, "max", 0)) return error("clamp: min is above max");
  if (in[0].dtype != DType::F32) return error("clamp: x must be F32");
  return one_output(in[0].shape);
}

Status clamp_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "clamp", 0));
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_output(ctx, "clamp", 0, X.shape));
  const float lo = float(attr_float(ctx.attrs, "min", 0)), hi = float(attr_float(ctx.attrs, "max", 0));
  for (int64_t i = 0; i < X.numel(); ++i) ctx.outputs[0].f32()[i] = std::min(std::max(X.f32()[i], lo), hi);
  return {};
}

}  // namespace

void define_pad(OpTable& t) {
  t.define(checked(OpDef{
               .name = "pad",
               .inputs = {"x"},
               .attrs = {{"pads", AttrSpec::IntList, nullptr}},
               .shape = pad_shape,
               .tolerance = {0, 0},
               .doc = "pad(x [C, H, W]) -> zeros around the image: pads [top, bottom, left, right]",
           }),
           pad_kernel);
  t.define(checked(OpDef{
               .name = "clamp",
               .inputs = {"x"},
               .attrs = {{"min", AttrSpec::Float, nullptr}, {"max", AttrSpec::Float, nullptr}},
               .shape = clamp_shape,
               .tolerance = {0, 0},
               .doc = "clamp(x) -> each element held to [min, max] (torch.clamp)",
           }),
           clamp_kernel);
}

}  // namespace arch

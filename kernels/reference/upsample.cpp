// upsample_nearest(x [C, H, W]) attr scale -> [C, H * scale, W * scale]:
// each pixel repeated scale x scale times (torch's nearest interpolate by
// an integer factor: the UNet's Upsample2D before its conv).
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> upsample_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  const int64_t s = attr_int(attrs, "scale", 2);
  if (x.size() != 3) return error("upsample_nearest: x must be [C, H, W], got " + shape_str(x));
  if (s < 1) return error("upsample_nearest: scale must be >= 1, got " + std::to_string(s));
  Shape out = x;
  for (size_t d = 1; d < 3; ++d) out[d] = x[d].concrete() ? Dim::of(x[d].n * s) : Dim::dyn();
  return one_output(out);
}

Status upsample_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "upsample_nearest", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.size() != 3) return kernel_error(ctx, "upsample_nearest", "x must be [C, H, W]");
  const int64_t s = attr_int(ctx.attrs, "scale", 2), C = X.dim(0), H = X.dim(1), W = X.dim(2);
  if (s < 1) return kernel_error(ctx, "upsample_nearest", "scale must be >= 1");
  ARCH_TRY_STATUS(expect_output(ctx, "upsample_nearest", 0, Dims{C, H * s, W * s}));
  float* y = ctx.outputs[0].f32();
  // y[c, i, j] = x[c, i / s, j / s]
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < H * s; ++i)
      for (int64_t j = 0; j < W * s; ++j) y[(c * H * s + i) * W * s + j] = X.f32()[(c * H + i / s) * W + j / s];
  return {};
}

}  // namespace

void define_upsample(OpTable& t) {
  t.define(checked(OpDef{
               .name = "upsample_nearest",
               .inputs = {"x"},
               .attrs = {{"scale", AttrSpec::Int, 2}},
               .shape = upsample_shape,
               .tolerance = {0, 0},
               .doc = "upsample_nearest(x [C, H, W]) -> [C, H*scale, W*scale]: each pixel repeated (torch's nearest interpolate)",
           }),
           upsample_kernel);
}

}  // namespace arch

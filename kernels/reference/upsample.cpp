// upsample_nearest(x [C, H, W] or [C, T, H, W]) attr scale -> H and W times
// scale: each pixel repeated scale x scale times (torch's nearest
// interpolate by an integer factor, and its nearest-exact, which agrees
// there: the UNet's Upsample2D before its conv; a video's frames each
// alike).
#include <algorithm>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> upsample_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  const int64_t s = attr_int(attrs, "scale", 2);
  if (x.size() != 3 && x.size() != 4) return error("upsample_nearest: x must be [C, H, W] or [C, T, H, W], got " + shape_str(x));
  if (s < 1) return error("upsample_nearest: scale must be >= 1, got " + std::to_string(s));
  Shape out = x;
  for (size_t d = x.size() - 2; d < x.size(); ++d) out[d] = x[d].concrete() ? Dim::of(x[d].n * s) : Dim::dyn();
  return one_output(out);
}

Status upsample_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "upsample_nearest", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.size() != 3 && X.shape.size() != 4) return kernel_error(ctx, "upsample_nearest", "x must be [C, H, W] or [C, T, H, W]");
  const int64_t s = attr_int(ctx.attrs, "scale", 2), H = X.dim(-2), W = X.dim(-1), C = X.numel() / std::max<int64_t>(H * W, 1);
  if (s < 1) return kernel_error(ctx, "upsample_nearest", "scale must be >= 1");
  Dims want = X.shape;
  want[want.size() - 2] = H * s;
  want.back() = W * s;
  ARCH_TRY_STATUS(expect_output(ctx, "upsample_nearest", 0, want));
  float* y = ctx.outputs[0].f32();
  // y[c, i, j] = x[c, i / s, j / s] (c: every plane, a video's frames too)
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
               .doc = "upsample_nearest(x [C, (T,) H, W]) -> H*scale, W*scale: each pixel repeated (torch's nearest interpolate)",
           }),
           upsample_kernel);
}

}  // namespace arch

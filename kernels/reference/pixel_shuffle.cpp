// pixel_shuffle(x [C·r², H, W]) attr factor r -> [C, H·r, W·r]: torch's
// nn.PixelShuffle, out[c, h r + i, w r + j] = x[c r² + i r + j, h, w]: a
// super-resolution model's channels spread into pixels.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> shuffle_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  const Shape& x = in[0].shape;
  const int64_t r = attr_int(a, "factor", 2);
  if (r < 1) return error("pixel_shuffle: factor must be at least 1, got " + std::to_string(r));
  if (x.size() != 3 || !x[0].concrete() || x[0].n % (r * r))
    return error("pixel_shuffle: x must be [C·" + std::to_string(r * r) + ", H, W], got " + shape_str(x));
  auto times = [r](const Dim& d) { return d.concrete() ? Dim::of(d.n * r) : Dim::dyn(); };
  return one_output(Shape{Dim::of(x[0].n / (r * r)), times(x[1]), times(x[2])});
}

Status shuffle_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "pixel_shuffle", 0));
  const Tensor& X = ctx.inputs[0];
  const int64_t r = attr_int(ctx.attrs, "factor", 2);
  if (X.shape.size() != 3 || r < 1 || X.dim(0) % (r * r)) return kernel_error(ctx, "pixel_shuffle", "x " + dims_str(X.shape) + " is not [C·r², H, W]");
  const int64_t C = X.dim(0) / (r * r), H = X.dim(1), W = X.dim(2);
  ARCH_TRY_STATUS(expect_output(ctx, "pixel_shuffle", 0, Dims{C, H * r, W * r}));
  float* y = ctx.outputs[0].f32();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < r; ++j)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w)
            y[(c * H * r + h * r + i) * W * r + w * r + j] = X.f32()[((c * r * r + i * r + j) * H + h) * W + w];
  return {};
}

}  // namespace

void define_pixel_shuffle(OpTable& t) {
  t.define(checked(OpDef{
               .name = "pixel_shuffle",
               .inputs = {"x"},
               .attrs = {{"factor", AttrSpec::Int, 2}},
               .shape = shuffle_shape,
               .tolerance = {0, 0},
               .doc = "pixel_shuffle(x [C·r², H, W]) -> [C, H·r, W·r]: torch's PixelShuffle",
           }),
           shuffle_kernel);
}

}  // namespace arch

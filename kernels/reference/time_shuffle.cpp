// time_shuffle(x [k C, T, H, W]) attr factor k -> [C, k T, H, W]: each frame's
// channels spread into k frames, the j-th group of C channels becoming frame
// t k + j (out[c, t k + j] = x[j C + c, t]). A video VAE's temporal
// upsampling makes two frames of each this way (Wan's upsample3d: a causal
// convolution to 2C channels, then x.reshape(2, C, T, H, W) interleaved in
// time).
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> time_shuffle_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  const Shape& x = in[0].shape;
  const int64_t k = attr_int(a, "factor", 2);
  if (k < 1) return error("time_shuffle: factor must be at least 1, got " + std::to_string(k));
  if (x.size() != 4 || !x[0].concrete() || x[0].n % k)
    return error("time_shuffle: x must be [" + std::to_string(k) + "·C, T, H, W], got " + shape_str(x));
  Shape out = x;
  out[0] = Dim::of(x[0].n / k);
  out[1] = x[1].concrete() ? Dim::of(x[1].n * k) : Dim::dyn();
  return one_output(out);
}

Status time_shuffle_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "time_shuffle", 0));
  const Tensor& X = ctx.inputs[0];
  const int64_t k = attr_int(ctx.attrs, "factor", 2);
  if (X.shape.size() != 4 || k < 1 || X.dim(0) % k)
    return kernel_error(ctx, "time_shuffle", "x " + dims_str(X.shape) + " is not [factor·C, T, H, W]");
  const int64_t C = X.dim(0) / k, T = X.dim(1), plane = X.dim(2) * X.dim(3);
  ARCH_TRY_STATUS(expect_output(ctx, "time_shuffle", 0, Dims{C, T * k, X.dim(2), X.dim(3)}));
  float* y = ctx.outputs[0].f32();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < k; ++j)
        std::memcpy(y + (c * T * k + t * k + j) * plane, X.f32() + ((j * C + c) * T + t) * plane, size_t(plane) * sizeof(float));
  return {};
}

}  // namespace

void define_time_shuffle(OpTable& t) {
  t.define(checked(OpDef{
               .name = "time_shuffle",
               .inputs = {"x"},
               .attrs = {{"factor", AttrSpec::Int, 2}},
               .shape = time_shuffle_shape,
               .tolerance = {0, 0},
               .fills = true,
               .moves_values = true,
               .doc = "time_shuffle(x [k·C, T, H, W]) -> [C, k·T, H, W]: channel group j of frame t becomes frame t·k + j",
           }),
           time_shuffle_kernel);
}

}  // namespace arch

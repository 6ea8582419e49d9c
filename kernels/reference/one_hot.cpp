// one_hot(indices i32 [...]) attr depth -> f32 [..., depth]: 1 at each
// index, 0 elsewhere; summed over the chosen ones it is the mask a scatter of
// ones makes (DeepSeek's groups kept by their router). An index outside
// 0..depth-1 is an error.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> one_hot_shape(std::span<const TypedShape> in, std::span<const bool>,
                                              const Attrs& attrs) {
  if (in[0].dtype != DType::I32)
    return error("one_hot: indices must be I32, got " + std::string(dtype_name(in[0].dtype)));
  const int64_t depth = attr_int(attrs, "depth", 0);
  if (depth < 1) return error("one_hot: depth must be >= 1, got " + std::to_string(depth));
  Shape out = in[0].shape;
  out.push_back(Dim::of(depth));
  return one_output(out, DType::F32);
}

Status one_hot_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_i32(ctx, "one_hot", 0));
  const Tensor& I = ctx.inputs[0];
  const int64_t depth = attr_int(ctx.attrs, "depth", 0);
  Dims want = I.shape;
  want.push_back(depth);
  ARCH_TRY_STATUS(expect_output(ctx, "one_hot", 0, want));
  float* out = ctx.outputs[0].f32();
  for (int64_t n = 0; n < I.numel(); ++n) {
    const int32_t at = I.i32()[n];
    if (at < 0 || at >= depth)
      return kernel_error(ctx, "one_hot", "index " + std::to_string(at) + " is outside 0.." + std::to_string(depth - 1));
    for (int64_t j = 0; j < depth; ++j) out[n * depth + j] = j == at ? 1.0f : 0.0f;
  }
  return {};
}

}  // namespace

void define_one_hot(OpTable& t) {
  t.define(checked(OpDef{
               .name = "one_hot",
               .inputs = {"indices"},
               .attrs = {{"depth", AttrSpec::Int, nullptr}},
               .shape = one_hot_shape,
               .tolerance = {0, 0},
               .fills = true,
               .doc = "one_hot(indices i32 [...]) -> f32 [..., depth]: 1 at each index, 0 elsewhere",
           }),
           one_hot_kernel);
}

}  // namespace arch

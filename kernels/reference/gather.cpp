// gather(x [..., N], indices i32 [..., k]) -> [..., k]: out[..., j] =
// x[..., indices[..., j]], each row picking from its own row of x (the
// leading dims agree): a router's weights at the experts it chose
// (torch.gather along the last dim). An index outside 0..N-1 is an error.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> gather_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs&) {
  const Shape& x = in[0].shape;
  const Shape& idx = in[1].shape;
  if (in[1].dtype != DType::I32) return error("gather: indices must be I32, got " + std::string(dtype_name(in[1].dtype)));
  if (x.empty() || x.size() != idx.size())
    return error("gather: x " + shape_str(x) + " and indices " + shape_str(idx) +
                 " must have the same rank, at least 1");
  for (size_t d = 0; d + 1 < x.size(); ++d)
    if (x[d] != idx[d])
      return error("gather: x " + shape_str(x) + " and indices " + shape_str(idx) + " differ before the last dim");
  return one_output(idx, in[0].dtype);
}

Status gather_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "gather", 0));
  ARCH_TRY_STATUS(expect_i32(ctx, "gather", 1));
  const Tensor& X = ctx.inputs[0];
  const Tensor& I = ctx.inputs[1];
  if (X.shape.empty() || X.shape.size() != I.shape.size() ||
      !std::equal(X.shape.begin(), X.shape.end() - 1, I.shape.begin()))
    return kernel_error(ctx, "gather", "x " + dims_str(X.shape) + " and indices " + dims_str(I.shape) +
                                           " must agree before the last dim");
  ARCH_TRY_STATUS(expect_output(ctx, "gather", 0, I.shape));
  const int64_t N = X.dim(-1), k = I.dim(-1), rows = N == 0 ? 0 : X.numel() / N;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j) {
      const int32_t at = I.i32()[r * k + j];
      if (at < 0 || at >= N)
        return kernel_error(ctx, "gather", "index " + std::to_string(at) + " at row " + std::to_string(r) +
                                               " is outside 0.." + std::to_string(N - 1));
      ctx.outputs[0].f32()[r * k + j] = X.f32()[r * N + at];
    }
  return {};
}

}  // namespace

void define_gather(OpTable& t) {
  t.define(checked(OpDef{
               .name = "gather",
               .inputs = {"x", "indices"},
               .attrs = {},
               .shape = gather_shape,
               .tolerance = {0, 0},
               .fills = true,
               .doc = "gather(x [..., N], indices i32 [..., k]) -> [..., k]: each row's entries at its indices (torch.gather on the last dim)",
           }),
           gather_kernel);
}

}  // namespace arch

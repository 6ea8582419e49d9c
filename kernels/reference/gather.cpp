// gather(x [..., N], indices i32 [..., k]) -> [..., k]: out[..., j] =
// x[..., indices[..., j]], each row picking from its own row of x: a
// router's weights at the experts it chose (torch.gather along the last
// dim). The leading dims agree, or are 1 in indices, which then serve every
// row along that dim (numpy's take_along_axis): one [S, 1, T] table of
// relative positions read by every head. An index outside 0..N-1 is an
// error.
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
  Shape out = x;
  out.back() = idx.back();
  for (size_t d = 0; d + 1 < x.size(); ++d)
    if (x[d] != idx[d] && idx[d] != Dim::of(1))
      return error("gather: x " + shape_str(x) + " and indices " + shape_str(idx) +
                   " differ before the last dim (where indices may be 1)");
  return one_output(out, in[0].dtype);
}

Status gather_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "gather", 0));
  ARCH_TRY_STATUS(expect_i32(ctx, "gather", 1));
  const Tensor& X = ctx.inputs[0];
  const Tensor& I = ctx.inputs[1];
  const size_t rank = X.shape.size();
  bool agree = rank > 0 && rank == I.shape.size();
  for (size_t d = 0; agree && d + 1 < rank; ++d) agree = I.shape[d] == X.shape[d] || I.shape[d] == 1;
  if (!agree)
    return kernel_error(ctx, "gather", "x " + dims_str(X.shape) + " and indices " + dims_str(I.shape) +
                                           " must agree before the last dim (or indices be 1 there)");
  Dims want = X.shape;
  want.back() = I.dim(-1);
  ARCH_TRY_STATUS(expect_output(ctx, "gather", 0, want));
  const int64_t N = X.dim(-1), k = I.dim(-1), rows = N == 0 ? 0 : X.numel() / N;
  for (int64_t r = 0; r < rows; ++r) {
    // Row r of x, and the row of indices it reads: r's digits over the
    // leading dims, 0 where indices is 1.
    int64_t rest = r, at_row = 0, stride = 1;
    for (size_t d = rank - 1; d-- > 0;) {
      const int64_t digit = rest % X.shape[d];
      rest /= X.shape[d];
      if (I.shape[d] != 1) at_row += digit * stride;
      stride *= I.shape[d];
    }
    for (int64_t j = 0; j < k; ++j) {
      const int32_t at = I.i32()[at_row * k + j];
      if (at < 0 || at >= N)
        return kernel_error(ctx, "gather", "index " + std::to_string(at) + " at row " + std::to_string(r) +
                                               " is outside 0.." + std::to_string(N - 1));
      ctx.outputs[0].f32()[r * k + j] = X.f32()[r * N + at];
    }
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
               .doc = "gather(x [..., N], indices i32 [..., k]) -> [..., k]: each row's entries at its indices (torch.gather on the last dim; indices' leading dims may be 1, serving every row)",
           }),
           gather_kernel);
}

}  // namespace arch

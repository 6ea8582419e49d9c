// flip(x) attr axis -> like x: the items along `axis` in reverse order
// (torch.flip over one dim). VITS' flows swap the halves of their channels
// this way between coupling layers. Any dtype (a copy).
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> flip_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("flip: x must have at least one dim, got []");
  ARCH_TRY_STATUS(normalize_axis("flip", attr_int(attrs, "axis", 0), x.size()));
  return one_output(x, in[0].dtype);
}

Status flip_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "flip", "x is required");
  const Tensor& X = ctx.inputs[0];
  if (!X.data || X.shape.empty()) return kernel_error(ctx, "flip", "x must be present with at least one dim");
  auto axis = normalize_axis("flip", attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "flip", axis.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "flip", 0, X.shape, X.dtype));
  // x viewed as [outer, n, inner]: out[o, n - 1 - a, :] = x[o, a, :]
  const auto [outer, n, inner] = around_axis(X.shape, *axis);
  const size_t row = size_t(inner) * dtype_size(X.dtype);
  const auto* x = static_cast<const char*>(X.data);
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < n; ++a) std::memcpy(out + size_t(o * n + n - 1 - a) * row, x + size_t(o * n + a) * row, row);
  return {};
}

}  // namespace

void define_flip(OpTable& t) {
  t.define(checked(OpDef{
               .name = "flip",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, nullptr}},
               .shape = flip_shape,
               .tolerance = {0, 0},
               .doc = "flip(x) attr axis -> like x: the items along axis in reverse order",
           }),
           flip_kernel);
}

}  // namespace arch

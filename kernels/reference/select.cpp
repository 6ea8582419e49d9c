// select(x) attrs axis, index -> x without `axis`: the one element at `index`
// along it (x[:, i] for axis 1), a copy (any dtype). A negative index counts
// from the end; out of range is an error. The axis may be `seq` (index -1:
// the last token), checked at run time.
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<int64_t> resolve_index(int64_t index, int64_t n) {
  const int64_t i = index < 0 ? index + n : index;
  if (i < 0 || i >= n)
    return error("select: index " + std::to_string(index) + " is out of range for a dim of " +
                 std::to_string(n));
  return i;
}

Result<std::vector<TypedShape>> select_shape(std::span<const TypedShape> in, std::span<const bool>,
                                             const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("select: x must have at least one dim, got []");
  ARCH_TRY(size_t axis, normalize_axis("select", attr_int(attrs, "axis", 0), x.size()));
  if (x[axis].concrete()) {
    auto i = resolve_index(attr_int(attrs, "index", 0), x[axis].n);
    if (!i.ok()) return error(i.error().message + " (axis " + std::to_string(axis) + " of x " + shape_str(x) + ")");
  }
  Shape out = x;
  out.erase(out.begin() + axis);
  return one_output(out, in[0].dtype);
}

Status select_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "select", "input 0 is missing");
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_input(ctx, "select", 0, X.dtype));
  if (X.shape.empty()) return kernel_error(ctx, "select", "x must have at least one dim");
  auto axis = normalize_axis("select", attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "select", axis.error().message);
  const size_t a = *axis;
  const int64_t n = X.shape[a];
  auto index = resolve_index(attr_int(ctx.attrs, "index", 0), n);
  if (!index.ok())
    return error(ctx.where + ": " + index.error().message + " (axis " + std::to_string(a) + " of x " +
                 dims_str(X.shape) + ")");
  Dims want = X.shape;
  want.erase(want.begin() + a);
  ARCH_TRY_STATUS(expect_output(ctx, "select", 0, want, X.dtype));
  // x viewed as [outer, n, inner]; out[o, :] = x[o, index, :]
  const auto [outer, along, inner] = around_axis(X.shape, a);
  const size_t row = size_t(inner) * dtype_size(X.dtype);
  const auto* x = static_cast<const char*>(X.data);
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  for (int64_t o = 0; o < outer && row; ++o) std::memcpy(out + o * row, x + (o * n + *index) * row, row);
  return {};
}

}  // namespace

void define_select(OpTable& t) {
  t.define(checked(OpDef{
               .name = "select",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, nullptr}, {"index", AttrSpec::Int, nullptr}},
               .shape = select_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "select(x) -> x without axis: the element at index along it (x[:, i] for axis 1), negative from the end",
           }),
           select_kernel);
}

}  // namespace arch

// Views for images of any size, where a reshape cannot name the sizes:
//   flatten(x) attrs axis, end -> x's dims before `axis`, their product from
//     `axis` through `end` (-1: the last), then the dims after `end` ([C, H,
//     W] -> [C, H W]: an image's pixels as tokens; [w², windows, heads, d]
//     -> [w², windows·heads, d] with end 2); a `_` among them makes the
//     product `_`.
//   reshape_as(x, like) -> like's shape, x's elements (the tokens back to
//     [C, H, W]); `like` gives only the shape.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// The dims `axis` .. `end` of a rank-`rank` x, checked; end -1 is the last.
Result<std::pair<size_t, size_t>> merged_range(const Attrs& attrs, size_t rank) {
  const int64_t axis = attr_int(attrs, "axis", 1), end_attr = attr_int(attrs, "end", -1);
  const int64_t end = end_attr < 0 ? int64_t(rank) + end_attr : end_attr;
  if (axis < 0 || axis >= int64_t(rank) || end < axis || end >= int64_t(rank))
    return error("flatten: axis " + std::to_string(axis) + " through end " + std::to_string(end_attr) + " are not dims of a rank-" +
                 std::to_string(rank) + " x");
  return std::pair<size_t, size_t>{size_t(axis), size_t(end)};
}

Result<std::vector<TypedShape>> flatten_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  if (in.size() != 1) return error("flatten: takes x");
  const Shape& x = in[0].shape;
  ARCH_TRY(auto range, merged_range(attrs, x.size()));
  Shape out(x.begin(), x.begin() + ptrdiff_t(range.first));
  Dim merged = Dim::of(1);
  for (size_t d = range.first; d <= range.second; ++d)
    merged = merged.concrete() && x[d].concrete() ? Dim::of(merged.n * x[d].n) : Dim::dyn();
  out.push_back(merged);
  out.insert(out.end(), x.begin() + ptrdiff_t(range.second) + 1, x.end());
  return one_output(out, in[0].dtype);
}

Result<std::vector<TypedShape>> reshape_as_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs&) {
  if (in.size() != 2) return error("reshape_as: takes x and like");
  const Shape &x = in[0].shape, &like = in[1].shape;
  int64_t nx = 1, nl = 1;
  bool known = true;
  for (const Dim& d : x) known = known && d.concrete(), nx *= d.concrete() ? d.n : 1;
  for (const Dim& d : like) known = known && d.concrete(), nl *= d.concrete() ? d.n : 1;
  if (known && nx != nl) return error("reshape_as: " + shape_str(x) + " does not hold the elements of " + shape_str(like));
  return one_output(like, in[0].dtype);
}

// out = x's storage under the shape `want`.
Status view_as(KernelContext& ctx, const char* op, const Dims& want) {
  const Tensor& X = ctx.inputs[0];
  if (numel(want) != X.numel()) return kernel_error(ctx, op, "cannot view " + dims_str(X.shape) + " as " + dims_str(want));
  ctx.outputs[0].shape = want;
  alias_storage(ctx.outputs[0], X);
  return {};
}

Status flatten_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() != 1 || ctx.outputs.empty()) return kernel_error(ctx, "flatten", "needs one input and one output");
  const Tensor& X = ctx.inputs[0];
  auto range = merged_range(ctx.attrs, X.shape.size());
  if (!range.ok()) return kernel_error(ctx, "flatten", range.error().message);
  Dims want(X.shape.begin(), X.shape.begin() + ptrdiff_t(range->first));
  int64_t merged = 1;
  for (size_t d = range->first; d <= range->second; ++d) merged *= X.shape[d];
  want.push_back(merged);
  want.insert(want.end(), X.shape.begin() + ptrdiff_t(range->second) + 1, X.shape.end());
  return view_as(ctx, "flatten", want);
}

Status reshape_as_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() != 2 || ctx.outputs.empty()) return kernel_error(ctx, "reshape_as", "needs x, like and one output");
  return view_as(ctx, "reshape_as", ctx.inputs[1].shape);
}

}  // namespace

void define_flatten(OpTable& t) {
  t.define(checked(OpDef{
               .name = "flatten",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, 1}, {"end", AttrSpec::Int, -1}},
               .shape = flatten_shape,
               .tolerance = {0, 0},
               .view = true,
               .doc = "flatten(x) -> x's dims before axis, the product of axis..end (-1: the last), the dims after ([C, H, W] -> [C, H W]; `_` stays `_`)",
           }),
           flatten_kernel);
  t.define(checked(OpDef{
               .name = "reshape_as",
               .inputs = {"x", "like"},
               .attrs = {},
               .shape = reshape_as_shape,
               .tolerance = {0, 0},
               .view = true,
               .doc = "reshape_as(x, like) -> like's shape over x's elements (like gives only the shape)",
           }),
           reshape_as_kernel);
}

}  // namespace arch

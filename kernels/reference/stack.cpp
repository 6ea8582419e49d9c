// stack(xs*) attr axis -> xs[0] with a new dim of len(xs) at `axis`: inputs of
// one shape and dtype (any dtype) stacked along a new axis (negative counts
// from the end of the output's dims, as in torch.stack).
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> stack_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                   const Attrs& attrs) {
  if (in.empty()) return error("stack: needs at least one input");
  const TypedShape& x = in[0];
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i].shape != x.shape || in[i].dtype != x.dtype)
      return error("stack: input " + std::to_string(i) + " is " + std::string(dtype_name(in[i].dtype)) +
                   shape_str(in[i].shape) + ", input 0 is " + std::string(dtype_name(x.dtype)) +
                   shape_str(x.shape) + " (all must agree)");
  ARCH_TRY(size_t axis, normalize_axis("stack", attr_int(attrs, "axis", 0), x.shape.size(), 1));
  Shape out = x.shape;
  out.insert(out.begin() + axis, Dim::of(int64_t(in.size())));
  return one_output(out, x.dtype);
}

static Status stack_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "stack", "needs at least one input");
  const Tensor& X = ctx.inputs[0];
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    ARCH_TRY_STATUS(expect_input(ctx, "stack", i, X.dtype));
    if (ctx.inputs[i].shape != X.shape)
      return kernel_error(ctx, "stack", "input " + std::to_string(i) + " is " + dims_str(ctx.inputs[i].shape) +
                                            ", input 0 is " + dims_str(X.shape) + " (all must agree)");
  }
  auto axis = normalize_axis("stack", attr_int(ctx.attrs, "axis", 0), X.shape.size(), 1);
  if (!axis.ok()) return kernel_error(ctx, "stack", axis.error().message);
  const int64_t n = int64_t(ctx.inputs.size());
  Dims want = X.shape;
  want.insert(want.begin() + *axis, n);
  ARCH_TRY_STATUS(expect_output(ctx, "stack", 0, want, X.dtype));
  // Each input viewed as [outer, inner]; out[o, i, :] = xs[i][o, :]
  int64_t outer = 1;
  for (size_t d = 0; d < *axis; ++d) outer *= X.shape[d];
  const size_t inner = outer ? X.nbytes() / size_t(outer) : 0;  // bytes
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(out + (o * n + i) * inner, static_cast<const char*>(ctx.inputs[i].data) + o * inner, inner);
  return {};
}

// A part of the stacked inputs' own axes (each expert's rows): the same
// part of each input.
static Result<SplitAnswer> stack_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  const int axis = int(attr_int(q.attrs, "axis", 0));
  const int at = axis < 0 ? axis + int(q.out[0].shape.size()) : axis;
  if (want.axis < 0 || want.axis == at) return error("stack: only a part of its inputs' own axes is defined");
  const Part each{want.axis > at ? want.axis - 1 : want.axis, want.ranges};
  return SplitAnswer{std::vector<Part>(q.in.size(), each), q.attrs};
}

void define_stack(OpTable& t) {
  t.define(checked(OpDef{
               .name = "stack",
               .inputs = {"xs*"},
               .attrs = {{"axis", AttrSpec::Int, 0}},
               .shape = stack_shape,
               .tolerance = {1e-6, 1e-6},
               .moves_values = true,
               .split = stack_split,
               .doc = "stack(xs*) -> xs[0] with a new dim len(xs) at axis: inputs of one shape stacked along a new axis",
           }),
           stack_kernel);
}

}  // namespace arch

// slice(x) attrs axis, start, end -> x with `axis` cut to [start, end): a copy
// of that range along a concrete or `_` axis (any dtype). start and end count from
// the end when negative and are clamped to the axis, as Python slices are
// (step 1; an empty range gives a zero-length dim); no end: to the end of
// the axis (a `_` one's frames after the first).
#include <algorithm>
#include <cstring>
#include <limits>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

// Python's x[start:end] bounds on a dim of n: the first index and the length.
std::pair<int64_t, int64_t> python_range(int64_t start, int64_t end, int64_t n) {
  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
  int64_t s = clamp(start), e = clamp(end);
  return {s, std::max<int64_t>(0, e - s)};
}

Result<std::vector<TypedShape>> slice_shape(std::span<const TypedShape> in, std::span<const bool>,
                                            const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("slice: x must have at least one dim, got []");
  ARCH_TRY(size_t axis, normalize_axis("slice", attr_int(attrs, "axis", 0), x.size()));
  // A `_` axis (a size known per call) gives a `_` one, sized when the call's shapes are.
  if (!x[axis].concrete() && x[axis] != Dim::dyn())
    return error("slice: axis " + std::to_string(axis) + " of x " + shape_str(x) + " is " + dim_str(x[axis]) +
                 ": only a concrete axis (or a `_` one) can be sliced");
  Shape out = x;
  if (x[axis].concrete()) out[axis] = Dim::of(python_range(attr_int(attrs, "start", 0), attr_int(attrs, "end", std::numeric_limits<int64_t>::max()), x[axis].n).second);
  return one_output(out, in[0].dtype);
}

Status slice_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "slice", "input 0 is missing");
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_input(ctx, "slice", 0, X.dtype));
  if (X.shape.empty()) return kernel_error(ctx, "slice", "x must have at least one dim");
  auto axis = normalize_axis("slice", attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "slice", axis.error().message);
  const size_t a = *axis;
  const int64_t n = X.shape[a];
  auto [start, len] = python_range(attr_int(ctx.attrs, "start", 0), attr_int(ctx.attrs, "end", std::numeric_limits<int64_t>::max()), n);
  // The output must be x's shape with `len` at the axis; compared in place
  // (a decode step slices some 70 times), the expected Dims made only to
  // say what is wrong.
  bool fits = !ctx.outputs.empty() && ctx.outputs[0].shape.size() == X.shape.size();
  for (size_t d = 0; fits && d < X.shape.size(); ++d) fits = ctx.outputs[0].shape[d] == (d == a ? len : X.shape[d]);
  if (!fits || ctx.outputs[0].dtype != X.dtype || (!ctx.outputs[0].data && ctx.outputs[0].numel() != 0)) {
    Dims want = X.shape;
    want[a] = len;
    ARCH_TRY_STATUS(expect_output(ctx, "slice", 0, want, X.dtype));
  }
  // x viewed as [outer, n, inner]; out[o, :, :] = x[o, start : start + len, :]
  const auto [outer, along, inner] = around_axis(X.shape, a);
  const size_t esize = dtype_size(X.dtype);
  const auto* x = static_cast<const char*>(X.data);
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  const size_t row = size_t(len * inner) * esize;
  for (int64_t o = 0; o < outer && row; ++o)
    std::memcpy(out + o * row, x + size_t((o * n + start) * inner) * esize, row);
  return {};
}

}  // namespace

// A part of another axis: the same of x; a part of the axis it cuts: those
// ranges of x, shifted by where the cut starts, which is then all of it.
static Result<SplitAnswer> slice_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  const Shape& x = q.in[0].shape;
  auto axis = normalize_axis("slice", attr_int(q.attrs, "axis", 0), x.size());
  if (want.axis < 0 || !axis.ok()) return error("slice: no such part");
  if (size_t(want.axis) != *axis) return SplitAnswer{{want}, q.attrs};
  auto [start, len] = python_range(attr_int(q.attrs, "start", 0), attr_int(q.attrs, "end", std::numeric_limits<int64_t>::max()), x[*axis].n);
  SplitAnswer a{{Part{want.axis, {}}}, q.attrs};
  for (const auto& [b, e] : want.ranges) a.inputs[0].ranges.push_back({start + b, start + e});
  a.attrs["start"] = 0;
  a.attrs["end"] = want.size();
  return a;
}

void define_slice(OpTable& t) {
  t.define(checked(OpDef{
               .name = "slice",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, nullptr},
                         {"start", AttrSpec::Int, nullptr},
                         {"end", AttrSpec::Int, std::numeric_limits<int64_t>::max()}},  // absent: to the end
               .shape = slice_shape,
               .tolerance = {1e-6, 1e-6},
               .fills = true,
               .moves_values = true,
               .split = slice_split,
               .doc = "slice(x) -> x[..., start:end, ...] along a concrete axis: a copy, Python's negative indices and clamping",
           }),
           slice_kernel);
}

}  // namespace arch

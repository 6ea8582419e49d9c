// concat(xs*) attr axis -> the inputs joined along `axis` (negative counts from
// the end): every input of one rank and dtype (any dtype), equal on every other
// dim. On `axis` a `seq` or `ctx` dim cannot be joined (a step's rows); a
// graph's own run-time dim (an encoder's `src`) or `_` can, the output's
// length then worked out per call (`_`): a joint attention's image and text
// keys.
#include <algorithm>
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> concat_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                    const Attrs& attrs) {
  if (in.empty()) return error("concat: needs at least one input");
  const TypedShape& x = in[0];
  if (x.shape.empty()) return error("concat: inputs must have at least one dim, got []");
  ARCH_TRY(size_t axis, normalize_axis("concat", attr_int(attrs, "axis", 0), x.shape.size()));
  Shape out = x.shape;
  out[axis] = Dim::of(0);
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    bool agree = in[i].dtype == x.dtype && s.size() == x.shape.size();
    for (size_t d = 0; agree && d < s.size(); ++d) agree = d == axis || s[d] == x.shape[d];
    if (!agree)
      return error("concat: input " + std::to_string(i) + " is " + std::string(dtype_name(in[i].dtype)) +
                   shape_str(s) + ", input 0 is " + std::string(dtype_name(x.dtype)) + shape_str(x.shape) +
                   " (all must agree except on axis " + std::to_string(axis) + ")");
    if (s[axis].sym == kSeqSym || s[axis].sym == kCtxSym)
      return error("concat: axis " + std::to_string(axis) + " of input " + std::to_string(i) + " " +
                   shape_str(s) + " is " + dim_str(s[axis]) + ": a step's rows cannot be concatenated");
    if (!s[axis].concrete()) out[axis] = Dim::dyn();
    else if (out[axis].concrete()) out[axis].n += s[axis].n;
  }
  return one_output(out, x.dtype);
}

static Status concat_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "concat", "needs at least one input");
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "concat", "inputs must have at least one dim");
  auto axis = normalize_axis("concat", attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "concat", axis.error().message);
  const size_t a = *axis;
  Dims want = X.shape;
  want[a] = 0;
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    ARCH_TRY_STATUS(expect_input(ctx, "concat", i, X.dtype));
    const Dims& s = ctx.inputs[i].shape;
    bool agree = s.size() == X.shape.size();
    for (size_t d = 0; agree && d < s.size(); ++d) agree = d == a || s[d] == X.shape[d];
    if (!agree)
      return kernel_error(ctx, "concat", "input " + std::to_string(i) + " is " + dims_str(s) + ", input 0 is " +
                                             dims_str(X.shape) + " (all must agree except on axis " +
                                             std::to_string(a) + ")");
    want[a] += s[a];
  }
  ARCH_TRY_STATUS(expect_output(ctx, "concat", 0, want, X.dtype));
  // Each input viewed as [outer, rows_i]; out[o, offset_i : offset_i + rows_i] = xs[i][o, :]
  const auto [outer, along, inner] = around_axis(X.shape, a);
  const size_t esize = dtype_size(X.dtype);
  const size_t out_row = size_t(want[a] * inner) * esize;  // bytes of one outer slice of out
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  size_t offset = 0;
  for (const Tensor& x : ctx.inputs) {
    const size_t row = size_t(x.shape[a] * inner) * esize;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + o * out_row + offset, static_cast<const char*>(x.data) + o * row, row);
    offset += row;
  }
  return {};
}

// A part of another axis than the one joined along: the same of each
// input. A part of the joined axis: each input's share of its ranges, in
// order (Gated DeltaNet's q | k | v channels, each process its heads'),
// so long as every input keeps some.
static Result<SplitAnswer> concat_split(const SplitQuery& q) {
  if (q.want.size() != 1 || q.want[0].axis < 0) return error("concat: no partial sum of it is defined");
  const Part& want = q.want[0];
  ARCH_TRY(size_t axis, normalize_axis("concat", attr_int(q.attrs, "axis", 0), q.out[0].shape.size()));
  if (size_t(want.axis) != axis) return SplitAnswer{std::vector<Part>(q.in.size(), want), q.attrs};
  for (size_t r = 1; r < want.ranges.size(); ++r)
    if (want.ranges[r].first < want.ranges[r - 1].second) return error("concat: the part's ranges are out of order");
  SplitAnswer a{{}, q.attrs};
  int64_t at = 0;
  for (size_t i = 0; i < q.in.size(); ++i) {
    const Dim& d = q.in[i].shape[axis];
    if (!d.concrete()) return error("concat: a run-time length along the joined axis is never cut");
    Part p{want.axis, {}};
    for (const auto& [b, e] : want.ranges)
      if (std::max(b, at) < std::min(e, at + d.n)) p.ranges.push_back({std::max(b, at) - at, std::min(e, at + d.n) - at});
    if (p.ranges.empty())
      return error("concat: the part holds nothing of input " + std::to_string(i) + ", which would be left out");
    a.inputs.push_back(std::move(p));
    at += d.n;
  }
  return a;
}

void define_concat(OpTable& t) {
  t.define(checked(OpDef{
               .name = "concat",
               .inputs = {"xs*"},
               .attrs = {{"axis", AttrSpec::Int, nullptr}},
               .shape = concat_shape,
               .tolerance = {1e-6, 1e-6},
               .moves_values = true,
               .split = concat_split,
               .doc = "concat(xs*) -> the inputs joined along an existing axis (concrete in every input; the other dims equal)",
           }),
           concat_kernel);
}

}  // namespace arch

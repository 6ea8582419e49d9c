// reshape(x) attr shape -> shape: the same elements under another shape, a
// view of x's storage. Entries: n > 0 is that size, 0 keeps x's dim at that
// index (an image's `_` token count through attention heads), -1 is the
// run-time `seq`, -s a template's run-time dim s (engine/core/shape.h: -4 on,
// `src`, `frames`).
#include <algorithm>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

// The symbolic shape an attr list names.
static Result<Shape> target_shape(const Attrs& attrs, const Shape& x) {
  Shape out;
  for (int64_t n : attr_ints(attrs, "shape")) {
    if (n == 0 && out.size() < x.size()) out.push_back(x[out.size()]);
    else if (n == 0) return error("reshape: a 0 entry keeps x's dim at its index, and x " + shape_str(x) + " has none there");
    else if (n == -1) out.push_back(Dim::seq());
    else if (n > 0) out.push_back(Dim::of(n));
    else if (n < -kDynSym) out.push_back(Dim::named(int(-n)));
    else return error("reshape: shape entries must be positive, 0 (x's dim), -1 (seq) or a named run-time dim, got " + std::to_string(n));
  }
  return out;
}

static Result<std::vector<TypedShape>> reshape_shape(std::span<const TypedShape> in,
                                                     std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  ARCH_TRY(Shape out, target_shape(attrs, x));
  // Same element count: the same run-time dims on each side, equal concrete
  // products.
  auto count = [](const Shape& s, int64_t* prod) {
    std::vector<int> syms;
    *prod = 1;
    for (const Dim& d : s) d.concrete() ? void(*prod *= d.n) : syms.push_back(d.sym);
    std::sort(syms.begin(), syms.end());
    return syms;
  };
  auto product = [](int64_t n, const std::vector<int>& syms) {
    std::string s = std::to_string(n);
    for (int sym : syms) s += " * " + dim_symbol_name(sym);
    return s;
  };
  int64_t px = 1, po = 1;
  std::vector<int> sx = count(x, &px), so = count(out, &po);
  if (sx != so || px != po)
    return error("reshape: cannot reshape " + shape_str(x) + " to " + shape_str(out) +
                 " (element counts differ: " + product(px, sx) + " vs " + product(po, so) + ")");
  return one_output(out, in[0].dtype);
}

// A part of the output along axis a is a part of x along the axis whose
// elements it runs over: the axes outside it hold the same count on both
// sides, and its ranges, counted in elements, fall on that axis's steps.
static Result<SplitAnswer> reshape_split(const SplitQuery& q) {
  if (q.want.size() != 1 || q.want[0].axis < 0) return error("reshape: no partial sum of it is defined");
  const Part& want = q.want[0];
  const Shape& x = q.in[0].shape;
  const Shape& out = q.out[0].shape;
  // Elements of one step along `axis` of s, and the product of the axes
  // before it: concrete only (a run-time dim is never cut).
  auto inner = [](const Shape& s, size_t axis, int64_t& n) {
    n = 1;
    for (size_t d = axis + 1; d < s.size(); ++d) {
      if (!s[d].concrete()) return false;
      n *= s[d].n;
    }
    return true;
  };
  auto outer_syms = [](const Shape& s, size_t axis, int64_t& n, std::vector<int>& syms) {
    n = 1;
    for (size_t d = 0; d < axis; ++d) d < s.size() && s[d].concrete() ? void(n *= s[d].n) : syms.push_back(s[d].sym);
  };
  const size_t a = size_t(want.axis);
  if (!out[a].concrete()) return error("reshape: a run-time dim is never cut");
  int64_t in_out = 0, outer_out = 0;
  std::vector<int> syms_out;
  if (!inner(out, a, in_out)) return error("reshape: a run-time dim inside the part");
  outer_syms(out, a, outer_out, syms_out);
  for (size_t k = 0; k < x.size(); ++k) {
    int64_t in_x = 0, outer_x = 0;
    std::vector<int> syms_x;
    if (!x[k].concrete() || !inner(x, k, in_x)) continue;
    outer_syms(x, k, outer_x, syms_x);
    if (outer_x != outer_out || syms_x != syms_out || x[k].n * in_x != out[a].n * in_out) continue;
    // Ranges cutting one of x's steps take the whole step where a step
    // holds whole ones of the output (a key head's group of value heads,
    // for a process holding one of them): the output is then made larger
    // than wanted, and its readers slice theirs from it.
    SplitAnswer ans{{Part{int(k), {}}}, q.attrs};
    Part made{want.axis, {}};
    for (const auto& [b, e] : want.ranges) {
      int64_t xb = b * in_out / in_x, xe = (e * in_out + in_x - 1) / in_x;
      if (((b * in_out) % in_x || (e * in_out) % in_x) && in_x % in_out)
        return error("reshape: the part's ranges do not fall on whole steps of x's axis " + std::to_string(k));
      if (!ans.inputs[0].ranges.empty() && xb < ans.inputs[0].ranges.back().second) {  // one step, rounded out twice
        xb = ans.inputs[0].ranges.back().first;
        xe = std::max(xe, ans.inputs[0].ranges.back().second);
        ans.inputs[0].ranges.pop_back();
        made.ranges.pop_back();
      }
      ans.inputs[0].ranges.push_back({xb, xe});
      made.ranges.push_back({xb * in_x / in_out, xe * in_x / in_out});
    }
    if (made != want) ans.outputs = {made};
    auto& spec = ans.attrs["shape"];
    if (spec.is_array() && a < spec.size() && spec[a].is_number_integer() && spec[a].get<int64_t>() > 0)
      spec[a] = made.size();
    return ans;
  }
  return error("reshape: the part of axis " + std::to_string(a) + " of " + shape_str(out) +
               " is no part of one axis of " + shape_str(x));
}

static Status reshape_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty() || ctx.outputs.empty())
    return kernel_error(ctx, "reshape", "needs one input and one output");
  const Tensor& X = ctx.inputs[0];
  Tensor& out = ctx.outputs[0];  // its shape concrete, as the caller gives it
  const Attrs& given = attr_json(ctx.attrs, "shape");
  if (out.shape.size() != given.size() || numel(out.shape) != X.numel()) {
    // Not given: solve a single -1 (seq) entry from x's element count.
    std::vector<int64_t> spec = attr_ints(ctx.attrs, "shape");
    for (size_t i = 0; i < spec.size(); ++i)
      if (spec[i] == 0 && i < X.shape.size()) spec[i] = X.shape[i];
    int64_t known = 1, seqs = 0;
    for (int64_t n : spec) n == -1 ? void(++seqs) : void(known *= n);
    if (seqs == 1 && known > 0 && X.numel() % known == 0)
      for (int64_t& n : spec) n = n == -1 ? X.numel() / known : n;
    out.shape = spec;
  }
  if (numel(out.shape) != X.numel())
    return kernel_error(ctx, "reshape", "cannot view " + dims_str(X.shape) + " as " + dims_str(out.shape));
  // out = x, viewed under its shape; assigned in place, so the shape's
  // storage is the caller's.
  alias_storage(out, X);
  return {};
}

void define_reshape(OpTable& t) {
  t.define(checked(OpDef{
               .name = "reshape",
               .inputs = {"x"},
               .attrs = {{"shape", AttrSpec::IntList, nullptr}},
               .shape = reshape_shape,
               .tolerance = {1e-6, 1e-6},
               .view = true,
               .moves_values = true,
               .split = reshape_split,
               .doc = "reshape(x) -> shape: the same elements viewed under attribute `shape` (0: x's dim there; -1: the run-time seq)",
           }),
           reshape_kernel);
}

}  // namespace arch

// reshape(x) attr shape -> shape: the same elements under another shape, a
// view of x's storage. Entries: n > 0 is that size, 0 keeps x's dim at that
// index (an image's `_` token count through attention heads), -1 is the
// run-time `seq`, -s a template's run-time dim s (engine/core/shape.h: -4 on,
// `src`, `frames`).
#include <algorithm>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

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
               .doc = "reshape(x) -> shape: the same elements viewed under attribute `shape` (0: x's dim there; -1: the run-time seq)",
           }),
           reshape_kernel);
}

}  // namespace arch

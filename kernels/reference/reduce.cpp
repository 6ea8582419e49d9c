// sum(x), mean(x) attrs axis, keepdim -> x without `axis` (or with it as 1 when
// keepdim): the sum or the mean along one axis (negative counts from the end),
// accumulated in double. The axis may be `seq` (mean pooling over tokens).
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> reduce_shape(const std::string& op, std::span<const TypedShape> in,
                                             const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error(op + ": x must have at least one dim, got []");
  ARCH_TRY(size_t axis, normalize_axis(op, attr_int(attrs, "axis", 0), x.size()));
  Shape out = x;
  if (attr_bool(attrs, "keepdim", false)) out[axis] = Dim::of(1);
  else out.erase(out.begin() + axis);
  return one_output(out);
}

Status reduce_kernel(KernelContext& ctx, const char* op, bool mean) {
  ARCH_TRY_STATUS(expect_f32(ctx, op, 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, op, "x must have at least one dim");
  auto axis = normalize_axis(op, attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, op, axis.error().message);
  Dims want = X.shape;
  if (attr_bool(ctx.attrs, "keepdim", false)) want[*axis] = 1;
  else want.erase(want.begin() + *axis);
  ARCH_TRY_STATUS(expect_output(ctx, op, 0, want));
  // x viewed as [outer, n, inner]; out[o, i] = sum_a x[o, a, i] (/ n for the mean)
  const auto [outer, n, inner] = around_axis(X.shape, *axis);
  const float* x = X.f32();
  float* out = ctx.outputs[0].f32();
  std::vector<double> acc(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t a = 0; a < n; ++a)
      for (int64_t i = 0; i < inner; ++i) acc[i] += x[(o * n + a) * inner + i];
    for (int64_t i = 0; i < inner; ++i) out[o * inner + i] = float(mean ? acc[i] / double(n) : acc[i]);
  }
  return {};
}

// A part of the axes it keeps: the same part of x.
Result<SplitAnswer> reduce_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  const int rank = int(q.in[0].shape.size());
  int axis = int(attr_int(q.attrs, "axis", 0));
  if (axis < 0) axis += rank;
  const bool keepdim = attr_bool(q.attrs, "keepdim", false);
  if (want.axis < 0 || (keepdim && want.axis == axis)) return error("reduce: only a part of the axes it keeps is defined");
  return SplitAnswer{{Part{!keepdim && want.axis >= axis ? want.axis + 1 : want.axis, want.ranges}}, q.attrs};
}

void define_one(OpTable& t, const std::string& name, const std::string& doc, bool mean) {
  t.define(checked(OpDef{
               .name = name,
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, nullptr}, {"keepdim", AttrSpec::Bool, false}},
               .shape = [name](std::span<const TypedShape> in, std::span<const bool>,
                               const Attrs& attrs) { return reduce_shape(name, in, attrs); },
               .tolerance = {1e-5, 1e-6},
               .split = reduce_split,
               .doc = doc,
           }),
           [name, mean](KernelContext& ctx) { return reduce_kernel(ctx, name.c_str(), mean); });
}

}  // namespace

void define_reduce(OpTable& t) {
  define_one(t, "sum", "sum(x) -> x without `axis` (kept as 1 with keepdim): the sum along axis", false);
  define_one(t, "mean", "mean(x) -> x without `axis` (kept as 1 with keepdim): the mean along axis", true);
}

}  // namespace arch

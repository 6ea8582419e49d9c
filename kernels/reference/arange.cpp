// arange(x) attr axis -> i32 [n]: 0, 1, ..., n - 1 for n = x's length along
// `axis` (a run-time dim such as `seq`, `ctx` or an encoder's `src` too).
// The positions of a sequence whose graph has no positions input: T5's
// relative position bias reads the key positions of the KV cache this way.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> arange_shape(std::span<const TypedShape> in, std::span<const bool>,
                                             const Attrs& attrs) {
  ARCH_TRY(size_t axis, normalize_axis("arange", attr_int(attrs, "axis", 0), in[0].shape.size()));
  return one_output(Shape{in[0].shape[axis]}, DType::I32);
}

Status arange_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "arange", "input 0 is missing");
  const Tensor& X = ctx.inputs[0];
  auto axis = normalize_axis("arange", attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "arange", axis.error().message);
  const int64_t n = X.dim(int64_t(*axis));
  ARCH_TRY_STATUS(expect_output(ctx, "arange", 0, Dims{n}, DType::I32));
  const int64_t start = attr_int(ctx.attrs, "start", 0);
  for (int64_t i = 0; i < n; ++i) ctx.outputs[0].i32()[i] = int32_t(start + i);  // out[i] = start + i
  return {};
}

// It reads x's length alone: wanted whole, x as it is held so long as its
// axis is whole; a range [b, e) of it: x's same range of that axis,
// counting from b.
Result<SplitAnswer> arange_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  auto axis = normalize_axis("arange", attr_int(q.attrs, "axis", 0), q.in[0].shape.size());
  if (!axis.ok()) return axis.error();
  if (want.is_whole()) return SplitAnswer{{Part{kAnyPart, {{int64_t(*axis), 0}}}}, q.attrs};
  if (want.axis != 0 || want.ranges.size() != 1) return error("arange: one range of it at most");
  SplitAnswer a{{Part{int(*axis), want.ranges}}, q.attrs};
  a.attrs["start"] = want.ranges[0].first;
  return a;
}

}  // namespace

void define_arange(OpTable& t) {
  t.define(checked(OpDef{
               .name = "arange",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, 0},
                         // Set only by a split over processes: the first number.
                         {"start", AttrSpec::Int, 0, /*planner_only=*/true}},
               .shape = arange_shape,
               .tolerance = {0, 0},
               .split = arange_split,
               .doc = "arange(x) -> i32 [n]: 0 .. n-1, n = x's length along axis (any dtype, run-time dims too)",
           }),
           arange_kernel);
}

}  // namespace arch

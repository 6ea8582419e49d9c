// cumsum(x) attr axis -> like x: the running sum along `axis`
// (torch.cumsum), each accumulated in double then rounded. VITS turns
// frames per token into the frame each token ends at with it.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> cumsum_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("cumsum: x must have at least one dim, got []");
  ARCH_TRY_STATUS(normalize_axis("cumsum", attr_int(attrs, "axis", 0), x.size()));
  return one_output(x);
}

Status cumsum_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "cumsum", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "cumsum", "x must have at least one dim");
  auto axis = normalize_axis("cumsum", attr_int(ctx.attrs, "axis", 0), X.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "cumsum", axis.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "cumsum", 0, X.shape));
  // x viewed as [outer, n, inner]: out[o, a, i] = sum_{b <= a} x[o, b, i]
  const auto [outer, n, inner] = around_axis(X.shape, *axis);
  const float* x = X.f32();
  float* out = ctx.outputs[0].f32();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      double acc = 0;
      for (int64_t a = 0; a < n; ++a) {
        const int64_t k = (o * n + a) * inner + i;
        acc += x[k];
        out[k] = float(acc);
      }
    }
  return {};
}

}  // namespace

void define_cumsum(OpTable& t) {
  t.define(checked(OpDef{
               .name = "cumsum",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, nullptr}},
               .shape = cumsum_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "cumsum(x) attr axis -> like x: the running sum along axis",
           }),
           cumsum_kernel);
}

}  // namespace arch

// conv_transpose1d(x [C, L], weight [C, O/groups, K], bias? [O]) attrs
// stride, padding, output_padding, dilation, groups -> [O, L']:
// torch.nn.functional.conv_transpose1d on one sequence. Each input position
// t scatters w[c, o, j] x[c, t] to output position t stride - padding + j
// dilation; L' = (L - 1) stride - 2 padding + dilation (K - 1) +
// output_padding + 1. HiFi-GAN's upsampling (k 16, stride 8, padding 4:
// L' = 8 L). L may be a run-time dim (L' then `_`, or L where the
// length is kept). Products accumulate in double.
#include <algorithm>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

struct TransposeAttrs {
  int64_t stride, padding, output_padding, dilation, groups;
};

TransposeAttrs transpose_attrs(const Attrs& a) {
  return {attr_int(a, "stride", 1), attr_int(a, "padding", 0), attr_int(a, "output_padding", 0),
          attr_int(a, "dilation", 1), attr_int(a, "groups", 1)};
}

// The checks the shape rule and the kernel share, on concrete dims.
Result<Dims> transpose_dims(const Dims& x, const Dims& w, const Dims* b, const TransposeAttrs& c) {
  if (x.size() != 2) return error("x must be [C, L], got " + dims_str(x));
  if (w.size() != 3) return error("weight must be [C, O/groups, K], got " + dims_str(w));
  if (c.stride < 1 || c.dilation < 1 || c.groups < 1 || c.padding < 0 || c.output_padding < 0)
    return error("stride, dilation and groups must be >= 1, padding and output_padding >= 0");
  if (c.output_padding >= std::max(c.stride, c.dilation))
    return error("output_padding (" + std::to_string(c.output_padding) + ") must be smaller than stride or dilation");
  const int64_t C = x[0], O = w[1] * c.groups;
  if (w[0] != C || C % c.groups != 0)
    return error("weight " + dims_str(w) + " does not take x " + dims_str(x) + " with groups = " +
                 std::to_string(c.groups) + " (its first dim is the input channels)");
  if (w[2] < 1) return error("weight " + dims_str(w) + " has an empty kernel");
  if (b && (b->size() != 1 || (*b)[0] != O))
    return error("bias " + dims_str(*b) + " does not match the " + std::to_string(O) + " output channels");
  const int64_t length = (x[1] - 1) * c.stride - 2 * c.padding + c.dilation * (w[2] - 1) + c.output_padding + 1;
  if (x[1] < 1 || length < 1) return error("x " + dims_str(x) + " gives no output positions");
  return Dims{O, length};
}

Result<std::vector<TypedShape>> transpose_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                                const Attrs& attrs) {
  return sequence_conv_shape("conv_transpose1d", in, present, [&](const Dims& x, const Dims& w, const Dims* b) {
    return transpose_dims(x, w, b, transpose_attrs(attrs));
  });
}

Status transpose_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "conv_transpose1d", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "conv_transpose1d", 1));
  const bool has_bias = has_input(ctx, 2);
  if (has_bias) ARCH_TRY_STATUS(expect_f32(ctx, "conv_transpose1d", 2));
  const Tensor& X = ctx.inputs[0];
  const Tensor& Wt = ctx.inputs[1];
  const TransposeAttrs c = transpose_attrs(ctx.attrs);
  auto dims = transpose_dims(X.shape, Wt.shape, has_bias ? &ctx.inputs[2].shape : nullptr, c);
  if (!dims.ok()) return kernel_error(ctx, "conv_transpose1d", dims.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "conv_transpose1d", 0, *dims));
  const int64_t C = X.shape[0], L = X.shape[1], Og = Wt.shape[1], K = Wt.shape[2], O = (*dims)[0],
                Lo = (*dims)[1];
  const int64_t Cg = C / c.groups;
  const float* x = X.f32();
  const float* w = Wt.f32();
  const float* bias = has_bias ? ctx.inputs[2].f32() : nullptr;
  float* out = ctx.outputs[0].f32();
  std::vector<double> acc(static_cast<size_t>(Lo));
  for (int64_t o = 0; o < O; ++o) {
    const int64_t g = o / Og, og = o % Og;
    // out[o, t s - p + j d] += w[g Cg + ci, og, j] * x[g Cg + ci, t]
    std::fill(acc.begin(), acc.end(), bias ? double(bias[o]) : 0.0);
    for (int64_t ci = g * Cg; ci < (g + 1) * Cg; ++ci) {
      const float* row = x + ci * L;
      for (int64_t j = 0; j < K; ++j) {
        const double wv = w[(ci * Og + og) * K + j];
        const int64_t off = j * c.dilation - c.padding;
        for (int64_t t = 0; t < L; ++t) {
          const int64_t s = t * c.stride + off;
          if (s >= 0 && s < Lo) acc[size_t(s)] += wv * row[t];
        }
      }
    }
    for (int64_t t = 0; t < Lo; ++t) out[o * Lo + t] = float(acc[size_t(t)]);
  }
  return {};
}

}  // namespace

void define_conv_transpose1d(OpTable& t) {
  t.define(checked(OpDef{
               .name = "conv_transpose1d",
               .inputs = {"x", "weight", "bias?"},
               .attrs = {{"stride", AttrSpec::Int, 1},
                         {"padding", AttrSpec::Int, 0},
                         {"output_padding", AttrSpec::Int, 0},
                         {"dilation", AttrSpec::Int, 1},
                         {"groups", AttrSpec::Int, 1}},
               .shape = transpose_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "conv_transpose1d(x [C, L], weight [C, O/groups, K], bias? [O]) -> [O, L']: the transposed 1-d "
                      "convolution (upsampling), one sequence",
           }),
           transpose_kernel);
}

}  // namespace arch

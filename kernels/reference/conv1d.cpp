// conv1d(x [C, L], weight [O, C/groups, K], bias? [O]) attrs stride,
// padding, dilation, groups -> [O, L']: torch.nn.functional.conv1d on one
// sequence (no batch dim), zero padding. L' = floor((L + 2 padding -
// dilation (K - 1) - 1) / stride) + 1. Whisper's stem: two of them, k 3,
// the second stride 2. L may be a run-time dim: L' is the same dim where
// the convolution keeps the length, else `_`, known per call. VITS: dilated
// and depthwise (groups = C) ones too. Products accumulate in double.
#include <algorithm>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

struct Conv1dAttrs {
  int64_t stride, padding, dilation, groups;
};

Conv1dAttrs conv1d_attrs(const Attrs& a) {
  return {attr_int(a, "stride", 1), attr_int(a, "padding", 0), attr_int(a, "dilation", 1),
          attr_int(a, "groups", 1)};
}

// The checks the shape rule and the kernel share, on concrete dims. The
// output dims, or a message (without the op's name).
Result<Dims> conv1d_dims(const Dims& x, const Dims& w, const Dims* b, const Conv1dAttrs& c) {
  if (x.size() != 2) return error("x must be [C, L], got " + dims_str(x));
  if (w.size() != 3) return error("weight must be [O, C/groups, K], got " + dims_str(w));
  if (c.stride < 1 || c.dilation < 1 || c.groups < 1 || c.padding < 0)
    return error("stride (" + std::to_string(c.stride) + "), dilation (" + std::to_string(c.dilation) +
                 ") and groups (" + std::to_string(c.groups) + ") must be >= 1, padding (" +
                 std::to_string(c.padding) + ") >= 0");
  const int64_t C = x[0], O = w[0];
  if (C % c.groups != 0 || O % c.groups != 0 || w[1] != C / c.groups)
    return error("weight " + dims_str(w) + " does not take x " + dims_str(x) + " with groups = " +
                 std::to_string(c.groups) + " (it reads " + std::to_string(w[1] * c.groups) +
                 " input channels, x has " + std::to_string(C) + ")");
  if (w[2] < 1) return error("weight " + dims_str(w) + " has an empty kernel");
  if (b && (b->size() != 1 || (*b)[0] != O))
    return error("bias " + dims_str(*b) + " does not match the output channels of weight " + dims_str(w));
  const int64_t span = x[1] + 2 * c.padding - c.dilation * (w[2] - 1) - 1;
  if (span < 0)
    return error("the kernel " + std::to_string(w[2]) + " (dilation " + std::to_string(c.dilation) +
                 ") is longer than x " + dims_str(x) + " padded by " + std::to_string(c.padding));
  return Dims{O, span / c.stride + 1};
}

Result<std::vector<TypedShape>> conv1d_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                             const Attrs& attrs) {
  if (const std::string act = attr_str(attrs, "activation", ""); !act.empty() && act != "leaky_relu")
    return error("conv1d: activation '" + act + "' is not one it folds (leaky_relu)");
  return sequence_conv_shape("conv1d", in, present, [&](const Dims& x, const Dims& w, const Dims* b) {
    return conv1d_dims(x, w, b, conv1d_attrs(attrs));
  });
}

Status conv1d_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "conv1d", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "conv1d", 1));
  const bool has_bias = has_input(ctx, 2);
  if (has_bias) ARCH_TRY_STATUS(expect_f32(ctx, "conv1d", 2));
  const Tensor& X = ctx.inputs[0];
  const Tensor& Wt = ctx.inputs[1];
  const Conv1dAttrs c = conv1d_attrs(ctx.attrs);
  auto dims = conv1d_dims(X.shape, Wt.shape, has_bias ? &ctx.inputs[2].shape : nullptr, c);
  if (!dims.ok()) return kernel_error(ctx, "conv1d", dims.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "conv1d", 0, *dims));
  const int64_t C = X.shape[0], L = X.shape[1], O = Wt.shape[0], K = Wt.shape[2], Lo = (*dims)[1];
  const int64_t Cg = C / c.groups, Og = O / c.groups;
  const float* x = X.f32();
  const float* w = Wt.f32();
  const float* bias = has_bias ? ctx.inputs[2].f32() : nullptr;
  float* out = ctx.outputs[0].f32();
  std::vector<double> acc(static_cast<size_t>(Lo));
  for (int64_t o = 0; o < O; ++o) {
    const int64_t g = o / Og;
    // out[o, t] = bias[o] + sum_{ci, j} w[o, ci, j] * x[g Cg + ci, t stride - padding + j dilation]
    std::fill(acc.begin(), acc.end(), bias ? double(bias[o]) : 0.0);
    for (int64_t ci = 0; ci < Cg; ++ci) {
      const float* row = x + (g * Cg + ci) * L;
      for (int64_t j = 0; j < K; ++j) {
        const double wv = w[(o * Cg + ci) * K + j];
        const int64_t off = j * c.dilation - c.padding;
        for (int64_t t = 0; t < Lo; ++t) {
          const int64_t s = t * c.stride + off;
          if (s >= 0 && s < L) acc[size_t(t)] += wv * row[s];
        }
      }
    }
    for (int64_t t = 0; t < Lo; ++t) out[o * Lo + t] = float(acc[size_t(t)]);
  }
  // The leaky_relu the planner folded in, on the rounded sums as the op
  // alone would see them.
  if (attr_str(ctx.attrs, "activation", "") == "leaky_relu") {
    const float slope = float(attr_float(ctx.attrs, "activation_slope", 0.01));
    for (int64_t i = 0; i < O * Lo; ++i) out[i] = out[i] >= 0.0f ? out[i] : out[i] * slope;
  }
  return {};
}

}  // namespace

void define_conv1d(OpTable& t) {
  t.define(checked(OpDef{
               .name = "conv1d",
               .inputs = {"x", "weight", "bias?"},
               .attrs = {{"stride", AttrSpec::Int, 1},
                         {"padding", AttrSpec::Int, 0},
                         {"dilation", AttrSpec::Int, 1},
                         {"groups", AttrSpec::Int, 1},
                         {"activation", AttrSpec::Str, "", /*planner_only=*/true},
                         {"activation_slope", AttrSpec::Float, 0.01, /*planner_only=*/true}},
               .shape = conv1d_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "conv1d(x [C, L], weight [O, C/groups, K], bias? [O]) -> [O, L']: 1-d convolution, zero padding, one sequence",
           }),
           conv1d_kernel);
}

}  // namespace arch

// conv2d(x [C, H, W], weight [O, C/groups, kH, kW], bias? [O]) attrs stride,
// padding, dilation, groups -> [O, H', W']: torch.nn.functional.conv2d on one
// image (no batch dim), zero padding, the same stride/padding/dilation on both
// axes. H' = floor((H + 2 padding - dilation (kH - 1) - 1) / stride) + 1, W'
// likewise. Every dim is concrete. Products accumulate in double.
#include <algorithm>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

struct ConvAttrs {
  int64_t stride, padding, dilation, groups;
};

ConvAttrs conv_attrs(const Attrs& a) {
  return {attr_int(a, "stride", 1), attr_int(a, "padding", 0), attr_int(a, "dilation", 1),
          attr_int(a, "groups", 1)};
}

// The output size of one spatial axis (n: input size, k: kernel size).
int64_t conv_out(int64_t n, int64_t k, const ConvAttrs& c) {
  int64_t span = n + 2 * c.padding - c.dilation * (k - 1) - 1;
  return span < 0 ? 0 : span / c.stride + 1;
}

// The checks the shape rule and the kernel share, on concrete dims:
// x [C, H, W], weight [O, C/groups, kH, kW], bias [O]. The output dims, or a
// message (without the op's name).
Result<Dims> conv_dims(const Dims& x, const Dims& w, const Dims* b, const ConvAttrs& c) {
  if (x.size() != 3) return error("x must be [C, H, W], got " + dims_str(x));
  if (w.size() != 4) return error("weight must be [O, C/groups, kH, kW], got " + dims_str(w));
  if (c.stride < 1 || c.dilation < 1 || c.groups < 1 || c.padding < 0)
    return error("stride (" + std::to_string(c.stride) + "), dilation (" + std::to_string(c.dilation) +
                 ") and groups (" + std::to_string(c.groups) + ") must be >= 1, padding (" +
                 std::to_string(c.padding) + ") >= 0");
  const int64_t C = x[0], O = w[0];
  if (C % c.groups != 0)
    return error("x has " + std::to_string(C) + " channels, not a multiple of groups = " +
                 std::to_string(c.groups));
  if (O % c.groups != 0)
    return error("weight " + dims_str(w) + " has " + std::to_string(O) +
                 " output channels, not a multiple of groups = " + std::to_string(c.groups));
  if (w[1] != C / c.groups)
    return error("weight " + dims_str(w) + " takes " + std::to_string(w[1]) + " input channels per group, x " +
                 dims_str(x) + " gives " + std::to_string(C / c.groups) + " (C / groups, groups = " +
                 std::to_string(c.groups) + ")");
  if (w[2] < 1 || w[3] < 1) return error("weight " + dims_str(w) + " has an empty kernel");
  if (b && (b->size() != 1 || (*b)[0] != O))
    return error("bias " + dims_str(*b) + " does not match the output channels of weight " + dims_str(w));
  const int64_t H = conv_out(x[1], w[2], c), W = conv_out(x[2], w[3], c);
  if (H < 1 || W < 1)
    return error("the kernel " + std::to_string(w[2]) + "x" + std::to_string(w[3]) + " (dilation " +
                 std::to_string(c.dilation) + ") is larger than x " + dims_str(x) + " padded by " +
                 std::to_string(c.padding));
  return Dims{O, H, W};
}

Result<std::vector<TypedShape>> conv2d_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                             const Attrs& attrs) {
  const bool has_bias = in.size() > 2 && is_present(present, 2);
  static const char* names[] = {"x", "weight", "bias"};
  // x's H and W may be `_` (known per call): then so are the output's.
  Shape x = in[0].shape;
  auto per_call = [](const Dim& d) { return d.sym == kDynSym || d.is_named(); };  // `_` or a graph's named dim
  bool dyn_h = x.size() == 3 && per_call(x[1]), dyn_w = x.size() == 3 && per_call(x[2]);
  if (dyn_h) x[1] = Dim::of(int64_t(1) << 20);
  if (dyn_w) x[2] = Dim::of(int64_t(1) << 20);
  for (size_t i = 0; i < in.size(); ++i)
    if ((i < 2 || has_bias) && !is_concrete(i == 0 ? x : in[i].shape))
      return error(std::string("conv2d: ") + names[i] + " " + shape_str(in[i].shape) +
                   " must have concrete dims, or `_` for H and W (images are [C, H, W])");
  Dims b = has_bias ? concretize(in[2].shape, 0) : Dims{};
  auto out = conv_dims(concretize(x, 0), concretize(in[1].shape, 0), has_bias ? &b : nullptr,
                       conv_attrs(attrs));
  if (!out.ok()) return error("conv2d: " + out.error().message);
  Shape o = shape_of(*out);
  if (dyn_h) o[1] = Dim::dyn();
  if (dyn_w) o[2] = Dim::dyn();
  return one_output(o);
}

Status conv2d_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "conv2d", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "conv2d", 1));
  const bool has_bias = has_input(ctx, 2);
  if (has_bias) ARCH_TRY_STATUS(expect_f32(ctx, "conv2d", 2));
  const Tensor& X = ctx.inputs[0];
  const Tensor& Wt = ctx.inputs[1];
  const ConvAttrs c = conv_attrs(ctx.attrs);
  auto dims = conv_dims(X.shape, Wt.shape, has_bias ? &ctx.inputs[2].shape : nullptr, c);
  if (!dims.ok()) return kernel_error(ctx, "conv2d", dims.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "conv2d", 0, *dims));
  const int64_t C = X.shape[0], H = X.shape[1], W = X.shape[2];
  const int64_t O = Wt.shape[0], kH = Wt.shape[2], kW = Wt.shape[3];
  const int64_t Ho = (*dims)[1], Wo = (*dims)[2];
  const int64_t Cg = C / c.groups, Og = O / c.groups;  // channels per group, in and out
  const float* x = X.f32();
  const float* w = Wt.f32();
  const float* bias = has_bias ? ctx.inputs[2].f32() : nullptr;
  float* out = ctx.outputs[0].f32();
  // The output columns whose input column ow * stride - padding + j * dilation
  // lies inside [0, n): [lo, hi) for kernel offset j.
  auto valid = [&](int64_t j, int64_t n, int64_t n_out, int64_t* lo, int64_t* hi) {
    const int64_t off = j * c.dilation - c.padding;  // input index at output 0
    // smallest o with o * stride + off >= 0; largest with o * stride + off <= n - 1
    *lo = off >= 0 ? 0 : (-off + c.stride - 1) / c.stride;
    *hi = n - 1 - off < 0 ? 0 : std::min(n_out, (n - 1 - off) / c.stride + 1);
  };
  std::vector<double> acc(size_t(Ho * Wo));
  for (int64_t o = 0; o < O; ++o) {
    const int64_t g = o / Og;
    // out[o, oh, ow] = bias[o] + sum_{ci, i, j} w[o, ci, i, j] * x[g Cg + ci, oh s - p + i d, ow s - p + j d]
    std::fill(acc.begin(), acc.end(), bias ? double(bias[o]) : 0.0);
    for (int64_t ci = 0; ci < Cg; ++ci) {
      const float* xc = x + (g * Cg + ci) * H * W;
      for (int64_t i = 0; i < kH; ++i) {
        int64_t oh0, oh1;
        valid(i, H, Ho, &oh0, &oh1);
        for (int64_t j = 0; j < kW; ++j) {
          int64_t ow0, ow1;
          valid(j, W, Wo, &ow0, &ow1);
          const double wv = w[((o * Cg + ci) * kH + i) * kW + j];
          for (int64_t oh = oh0; oh < oh1; ++oh) {
            const float* row = xc + (oh * c.stride - c.padding + i * c.dilation) * W;
            double* a = acc.data() + oh * Wo;
            for (int64_t ow = ow0; ow < ow1; ++ow) a[ow] += wv * row[ow * c.stride - c.padding + j * c.dilation];
          }
        }
      }
    }
    for (int64_t k = 0; k < Ho * Wo; ++k) out[o * Ho * Wo + k] = float(acc[k]);
  }
  return {};
}

}  // namespace

void define_conv2d(OpTable& t) {
  t.define(checked(OpDef{
               .name = "conv2d",
               .inputs = {"x", "weight", "bias?"},
               .attrs = {{"stride", AttrSpec::Int, 1},
                         {"padding", AttrSpec::Int, 0},
                         {"dilation", AttrSpec::Int, 1},
                         {"groups", AttrSpec::Int, 1}},
               .shape = conv2d_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "conv2d(x [C, H, W], weight [O, C/groups, kH, kW], bias? [O]) -> [O, H', W']: 2-d convolution, zero padding, one image",
           }),
           conv2d_kernel);
}

}  // namespace arch

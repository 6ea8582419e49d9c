// conv3d(x [C, T, H, W], weight [O, C, kT, kH, kW], bias? [O]) attrs stride
// [t, h, w], padding [front, back, top, bottom, left, right] -> [O, T', H',
// W']: torch.nn.functional.conv3d on one video (no batch dim) after zeros
// padded on each side by its own amount, as F.pad does it first. A causal
// convolution in time (a video VAE's: frame t sees frames up to t) pads
// kT - 1 frames in front and none behind; a patch embedding strides by its
// kernel. T' = floor((T + front + back - kT) / stride_t) + 1 (0 when the
// padded frames are fewer than kT), H' and W' likewise (at least 1). T, H
// and W may be `_` (known per call). Products accumulate in double.
#include "kernels/reference/conv3d.h"

#include <algorithm>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

Result<Conv3dAttrs> conv3d_attrs(const Attrs& a) {
  Conv3dAttrs c;
  const auto stride = attr_ints(a, "stride"), padding = attr_ints(a, "padding");
  if (!stride.empty()) {
    if (stride.size() != 3) return error("stride must be [t, h, w]");
    std::copy(stride.begin(), stride.end(), c.stride);
  }
  if (!padding.empty()) {
    if (padding.size() != 6) return error("padding must be [front, back, top, bottom, left, right]");
    std::copy(padding.begin(), padding.end(), c.pad);
  }
  for (int64_t s : c.stride)
    if (s < 1) return error("each stride must be >= 1");
  for (int64_t p : c.pad)
    if (p < 0) return error("each padding must be >= 0");
  return c;
}

int64_t conv3d_out(int64_t n, int64_t k, int64_t before, int64_t after, int64_t stride) {
  const int64_t span = n + before + after - k;
  return span < 0 ? 0 : span / stride + 1;
}

Result<Dims> conv3d_dims(const Dims& x, const Dims& w, const Dims* b, const Conv3dAttrs& c) {
  if (x.size() != 4) return error("x must be [C, T, H, W], got " + dims_str(x));
  if (w.size() != 5) return error("weight must be [O, C, kT, kH, kW], got " + dims_str(w));
  if (w[1] != x[0])
    return error("weight " + dims_str(w) + " takes " + std::to_string(w[1]) + " input channels, x " + dims_str(x) +
                 " has " + std::to_string(x[0]));
  if (w[2] < 1 || w[3] < 1 || w[4] < 1) return error("weight " + dims_str(w) + " has an empty kernel");
  if (b && (b->size() != 1 || (*b)[0] != w[0]))
    return error("bias " + dims_str(*b) + " does not match the output channels of weight " + dims_str(w));
  Dims out = {w[0]};
  for (int d = 0; d < 3; ++d) {
    const int64_t n = conv3d_out(x[size_t(d) + 1], w[size_t(d) + 2], c.pad[2 * d], c.pad[2 * d + 1], c.stride[d]);
    // Too few frames give none (a temporal downsample of a video's first
    // frame alone: the frames after it, of which there are none); too
    // small an image is a fault.
    if (n < 1 && d > 0)
      return error("the kernel " + dims_str(w) + " is larger than x " + dims_str(x) + " padded as given");
    out.push_back(n);
  }
  return out;
}

namespace {

Result<std::vector<TypedShape>> conv3d_shape(std::span<const TypedShape> in, std::span<const bool> present,
                                             const Attrs& attrs) {
  const bool has_bias = in.size() > 2 && is_present(present, 2);
  auto c = conv3d_attrs(attrs);
  if (!c.ok()) return error("conv3d: " + c.error().message);
  // x's T, H and W may be `_`: then so are the output's.
  Shape x = in[0].shape;
  if (x.size() != 4) return error("conv3d: x must be [C, T, H, W], got " + shape_str(x));
  bool per_call[4] = {};
  for (size_t d = 1; d < 4; ++d)
    if (x[d].sym == kDynSym || x[d].is_named()) {
      per_call[d] = true;
      x[d] = Dim::of(int64_t(1) << 20);
    }
  static const char* names[] = {"x", "weight", "bias"};
  for (size_t i = 0; i < in.size(); ++i)
    if ((i < 2 || has_bias) && !is_concrete(i == 0 ? x : in[i].shape))
      return error(std::string("conv3d: ") + names[i] + " " + shape_str(in[i].shape) +
                   " must have concrete dims, or `_` for T, H and W (videos are [C, T, H, W])");
  Dims b = has_bias ? concretize(in[2].shape, 0) : Dims{};
  auto out = conv3d_dims(concretize(x, 0), concretize(in[1].shape, 0), has_bias ? &b : nullptr, *c);
  if (!out.ok()) return error("conv3d: " + out.error().message);
  Shape o = shape_of(*out);
  for (size_t d = 1; d < 4; ++d)
    if (per_call[d]) o[d] = Dim::dyn();
  return one_output(o);
}

Status conv3d_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "conv3d", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "conv3d", 1));
  const bool has_bias = has_input(ctx, 2);
  if (has_bias) ARCH_TRY_STATUS(expect_f32(ctx, "conv3d", 2));
  const Tensor& X = ctx.inputs[0];
  const Tensor& Wt = ctx.inputs[1];
  auto c = conv3d_attrs(ctx.attrs);
  if (!c.ok()) return kernel_error(ctx, "conv3d", c.error().message);
  auto dims = conv3d_dims(X.shape, Wt.shape, has_bias ? &ctx.inputs[2].shape : nullptr, *c);
  if (!dims.ok()) return kernel_error(ctx, "conv3d", dims.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "conv3d", 0, *dims));
  const int64_t C = X.dim(0), T = X.dim(1), H = X.dim(2), W = X.dim(3);
  const int64_t O = Wt.dim(0), kT = Wt.dim(2), kH = Wt.dim(3), kW = Wt.dim(4);
  const int64_t To = (*dims)[1], Ho = (*dims)[2], Wo = (*dims)[3];
  const float* x = X.f32();
  const float* w = Wt.f32();
  const float* bias = has_bias ? ctx.inputs[2].f32() : nullptr;
  float* out = ctx.outputs[0].f32();
  // out[o, t, i, j] = bias[o] + sum_{ci, a, b, e} w[o, ci, a, b, e] x[ci, t st - front + a, i sh - top + b, j sw - left + e]
  std::vector<double> acc(size_t(Ho * Wo));
  for (int64_t o = 0; o < O; ++o)
    for (int64_t t = 0; t < To; ++t) {
      std::fill(acc.begin(), acc.end(), bias ? double(bias[o]) : 0.0);
      for (int64_t ci = 0; ci < C; ++ci)
        for (int64_t a = 0; a < kT; ++a) {
          const int64_t ti = t * c->stride[0] - c->pad[0] + a;
          if (ti < 0 || ti >= T) continue;
          const float* frame = x + (ci * T + ti) * H * W;
          for (int64_t b = 0; b < kH; ++b)
            for (int64_t e = 0; e < kW; ++e) {
              const double wv = w[(((o * C + ci) * kT + a) * kH + b) * kW + e];
              for (int64_t i = 0; i < Ho; ++i) {
                const int64_t y = i * c->stride[1] - c->pad[2] + b;
                if (y < 0 || y >= H) continue;
                for (int64_t j = 0; j < Wo; ++j) {
                  const int64_t xx = j * c->stride[2] - c->pad[4] + e;
                  if (xx >= 0 && xx < W) acc[size_t(i * Wo + j)] += wv * frame[y * W + xx];
                }
              }
            }
        }
      for (int64_t k = 0; k < Ho * Wo; ++k) out[(o * To + t) * Ho * Wo + k] = float(acc[size_t(k)]);
    }
  return {};
}

}  // namespace

void define_conv3d(OpTable& t) {
  t.define(checked(OpDef{
               .name = "conv3d",
               .inputs = {"x", "weight", "bias?"},
               .attrs = {{"stride", AttrSpec::IntList, nlohmann::json::array({1, 1, 1})},
                         {"padding", AttrSpec::IntList, nlohmann::json::array({0, 0, 0, 0, 0, 0})}},
               .shape = conv3d_shape,
               .tolerance = {1e-5, 1e-6},
               .fills = true,
               .doc = "conv3d(x [C, T, H, W], weight [O, C, kT, kH, kW], bias? [O]) -> [O, T', H', W']: 3-d convolution, "
                      "zeros padded [front, back, top, bottom, left, right] (causal in time: kT - 1 in front), one video",
           }),
           conv3d_kernel);
}

}  // namespace arch

// resize(x [..., H, W], like [..., h, w]) attrs mode, antialias -> [..., h, w]:
// torch's interpolate to like's size (only its last two dims count), align_corners
// false: mode "bilinear" or "bicubic" (A = -0.75, the four taps clamped at
// the border); antialias as torch's: a filter (bicubic A = -0.5) widened by
// the scale when shrinking, truncated at the border and renormalised. A
// position table resized to an image's patch grid (DINOv2). Separable: the
// width pass, then the height pass, accumulated in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> resize_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  const Shape& like = in[1].shape;
  const std::string mode = attr_str(attrs, "mode", "bilinear");
  if (mode != "bilinear" && mode != "bicubic")
    return error("resize: mode '" + mode + "' is not bilinear or bicubic");
  if (x.size() < 2 || like.size() < 2)
    return error("resize: x " + shape_str(x) + " and like " + shape_str(like) + " must each have at least [H, W]");
  Shape out = x;
  out[x.size() - 2] = like[like.size() - 2];
  out[x.size() - 1] = like[like.size() - 1];
  return one_output(out);
}

// One output index's taps along an axis: input indices and their weights.
struct Taps {
  std::vector<int64_t> at;
  std::vector<double> w;
};

double cubic(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

std::vector<Taps> taps(int64_t in, int64_t out, bool bicubic, bool antialias) {
  std::vector<Taps> all(static_cast<size_t>(out));
  const double scale = double(in) / double(out);
  for (int64_t o = 0; o < out; ++o) {
    Taps& t = all[size_t(o)];
    if (antialias) {
      const double support = (bicubic ? 2.0 : 1.0) * (scale >= 1 ? scale : 1.0), invscale = scale >= 1 ? 1 / scale : 1;
      const double center = scale * (double(o) + 0.5);
      const int64_t lo = std::max<int64_t>(int64_t(center - support + 0.5), 0);
      const int64_t hi = std::min<int64_t>(int64_t(center + support + 0.5), in);
      double total = 0;
      for (int64_t i = lo; i < hi; ++i) {
        const double x = (double(i) - center + 0.5) * invscale;
        const double w = bicubic ? cubic(x, -0.5) : std::max(0.0, 1 - std::fabs(x));
        t.at.push_back(i), t.w.push_back(w), total += w;
      }
      for (double& w : t.w) w = total != 0 ? w / total : 0;
    } else if (bicubic) {
      const double real = scale * (double(o) + 0.5) - 0.5;
      const int64_t i0 = std::min<int64_t>(int64_t(std::floor(real)), in - 1);
      const double l = std::clamp(real - double(i0), 0.0, 1.0);
      const double w[4] = {cubic(l + 1, -0.75), cubic(l, -0.75), cubic(1 - l, -0.75), cubic(2 - l, -0.75)};
      for (int64_t k = 0; k < 4; ++k) t.at.push_back(std::clamp<int64_t>(i0 - 1 + k, 0, in - 1)), t.w.push_back(w[k]);
    } else {
      const double real = std::max(scale * (double(o) + 0.5) - 0.5, 0.0);
      const int64_t i0 = std::min<int64_t>(int64_t(real), in - 1), i1 = std::min<int64_t>(i0 + 1, in - 1);
      const double l = real - double(i0);
      t.at = {i0, i1}, t.w = {1 - l, l};
    }
  }
  return all;
}

Status resize_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "resize", 0));
  const Tensor& X = ctx.inputs[0];
  const Tensor& like = ctx.inputs[1];
  if (X.shape.size() < 2 || like.shape.size() < 2) return kernel_error(ctx, "resize", "x and like must each have at least [H, W]");
  const int64_t H = X.dim(-2), W = X.dim(-1), h = like.dim(-2), w = like.dim(-1);
  if (H < 1 || W < 1) return kernel_error(ctx, "resize", "x " + dims_str(X.shape) + " is empty");
  Dims want = X.shape;
  want[want.size() - 2] = h, want[want.size() - 1] = w;
  ARCH_TRY_STATUS(expect_output(ctx, "resize", 0, want));
  const bool bicubic = attr_str(ctx.attrs, "mode", "bilinear") == "bicubic", aa = attr_bool(ctx.attrs, "antialias", false);
  const std::vector<Taps> across = taps(W, w, bicubic, aa), down = taps(H, h, bicubic, aa);
  const int64_t planes = X.numel() / (H * W);
  std::vector<double> rows(size_t(H * w));
  for (int64_t p = 0; p < planes; ++p) {
    const float* x = X.f32() + p * H * W;
    float* y = ctx.outputs[0].f32() + p * h * w;
    for (int64_t i = 0; i < H; ++i)
      for (int64_t j = 0; j < w; ++j) {
        double acc = 0;
        const Taps& t = across[size_t(j)];
        for (size_t k = 0; k < t.at.size(); ++k) acc += t.w[k] * x[i * W + t.at[k]];
        rows[size_t(i * w + j)] = acc;
      }
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        double acc = 0;
        const Taps& t = down[size_t(i)];
        for (size_t k = 0; k < t.at.size(); ++k) acc += t.w[k] * rows[size_t(t.at[k] * w + j)];
        y[i * w + j] = float(acc);
      }
  }
  return {};
}

}  // namespace

void define_resize(OpTable& t) {
  t.define(checked(OpDef{
               .name = "resize",
               .inputs = {"x", "like"},
               .attrs = {{"mode", AttrSpec::Str, "bilinear"}, {"antialias", AttrSpec::Bool, false}},
               .shape = resize_shape,
               .tolerance = {1e-5, 1e-5},
               .doc = "resize(x [..., H, W], like [..., h, w]) -> [..., h, w]: torch's interpolate (bilinear or bicubic, align_corners false, antialias optional) to like's last two dims",
           }),
           resize_kernel);
}

}  // namespace arch

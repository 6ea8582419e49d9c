// A video's blocks of frames and pixels moved into its channels and back,
// with the channel counts of a residual shortcut between levels (Wan 2.2's
// VAE: AvgDown3D and DupUp3D):
//   space_time_to_depth(x [C, T, H, W]) attrs factor_t ft, factor_s fs,
//     channels O -> [O, T', H / fs, W / fs]: the video first padded in front
//     with the frames that make T a multiple of ft (T' = ceil(T / ft)); the
//     block (a, b, d) of frame t' and pixel (h, w) becomes channel
//     ((c ft + a) fs + b) fs + d; then each O-th group of those
//     C ft fs fs channels averaged (group = C ft fs fs / O).
//   depth_to_space_time(x [C, T, H, W]) attrs factor_t ft, factor_s fs,
//     channels O -> [O, T ft, H fs, W fs]: each channel repeated
//     O ft fs fs / C times (repeat_interleave), then channel
//     ((o ft + a) fs + b) fs + d becomes frame t ft + a, pixel
//     (h fs + b, w fs + d) of channel o.
// T, H and W may be `_` (known per call).
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

struct Factors {
  int64_t ft, fs, O;
};

Result<Factors> factors_of(const char* op, const Attrs& a, int64_t C, bool down) {
  Factors f{attr_int(a, "factor_t", 1), attr_int(a, "factor_s", 2), attr_int(a, "channels", 0)};
  if (f.ft < 1 || f.fs < 1 || f.O < 1)
    return error(std::string(op) + ": factor_t, factor_s and channels must be at least 1");
  const int64_t block = f.ft * f.fs * f.fs;
  if (down ? (C * block) % f.O != 0 : (f.O * block) % C != 0)
    return error(std::string(op) + ": " + std::to_string(C) + " channels in blocks of " + std::to_string(block) +
                 (down ? " do not average into " : " do not repeat into ") + std::to_string(f.O) + " channels");
  return f;
}

Result<std::vector<TypedShape>> shape_rule(const char* op, std::span<const TypedShape> in, const Attrs& a, bool down) {
  const Shape& x = in[0].shape;
  if (x.size() != 4 || !x[0].concrete()) return error(std::string(op) + ": x must be [C, T, H, W], got " + shape_str(x));
  ARCH_TRY(Factors f, factors_of(op, a, x[0].n, down));
  auto scaled = [&](const Dim& d, int64_t k, bool ceil) -> Result<Dim> {
    if (!d.concrete()) return Dim::dyn();
    if (!down) return Dim::of(d.n * k);
    if (!ceil && d.n % k) return error(std::string(op) + ": H and W of " + shape_str(x) + " must be multiples of " + std::to_string(k));
    return Dim::of((d.n + k - 1) / k);
  };
  ARCH_TRY(Dim t, scaled(x[1], f.ft, true));
  ARCH_TRY(Dim h, scaled(x[2], f.fs, false));
  ARCH_TRY(Dim w, scaled(x[3], f.fs, false));
  return one_output(Shape{Dim::of(f.O), t, h, w});
}

Result<std::vector<TypedShape>> down_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  return shape_rule("space_time_to_depth", in, a, true);
}
Result<std::vector<TypedShape>> up_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  return shape_rule("depth_to_space_time", in, a, false);
}

// The call's video and factors, checked as the shape rule checks them.
Result<Factors> call_factors(const KernelContext& ctx, const char* op, bool down) {
  ARCH_TRY_STATUS(expect_f32(ctx, op, 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.size() != 4) return kernel_error(ctx, op, "x must be [C, T, H, W]");
  auto f = factors_of(op, ctx.attrs, X.dim(0), down);
  if (!f.ok()) return kernel_error(ctx, op, f.error().message);
  return *f;
}

Status down_kernel(KernelContext& ctx) {
  ARCH_TRY(Factors f, call_factors(ctx, "space_time_to_depth", true));
  const Tensor& X = ctx.inputs[0];
  const int64_t C = X.dim(0), T = X.dim(1), H = X.dim(2), W = X.dim(3);
  if (H % f.fs || W % f.fs) return kernel_error(ctx, "space_time_to_depth", "H and W must be multiples of factor_s");
  const int64_t ft = f.ft, fs = f.fs, O = f.O, pad = (ft - T % ft) % ft;
  const int64_t To = (T + pad) / ft, Ho = H / fs, Wo = W / fs, group = C * ft * fs * fs / O;
  ARCH_TRY_STATUS(expect_output(ctx, "space_time_to_depth", 0, Dims{O, To, Ho, Wo}));
  float* y = ctx.outputs[0].f32();
  std::memset(y, 0, size_t(O * To * Ho * Wo) * sizeof(float));
  // y[k / group, t', h', w'] += x[c, t' ft + a - pad, h' fs + b, w' fs + d] / group, k = ((c ft + a) fs + b) fs + d
  for (int64_t c = 0; c < C; ++c)
    for (int64_t a = 0; a < ft; ++a)
      for (int64_t b = 0; b < fs; ++b)
        for (int64_t d = 0; d < fs; ++d) {
          const int64_t o = (((c * ft + a) * fs + b) * fs + d) / group;
          for (int64_t t = 0; t < To; ++t) {
            const int64_t ti = t * ft + a - pad;
            if (ti < 0) continue;  // the padded frames are zeros
            for (int64_t h = 0; h < Ho; ++h)
              for (int64_t w = 0; w < Wo; ++w)
                y[((o * To + t) * Ho + h) * Wo + w] += X.f32()[((c * T + ti) * H + h * fs + b) * W + w * fs + d] / float(group);
          }
        }
  return {};
}

Status up_kernel(KernelContext& ctx) {
  ARCH_TRY(Factors f, call_factors(ctx, "depth_to_space_time", false));
  const Tensor& X = ctx.inputs[0];
  const int64_t C = X.dim(0), T = X.dim(1), H = X.dim(2), W = X.dim(3);
  const int64_t ft = f.ft, fs = f.fs, O = f.O, repeats = O * ft * fs * fs / C;
  ARCH_TRY_STATUS(expect_output(ctx, "depth_to_space_time", 0, Dims{O, T * ft, H * fs, W * fs}));
  float* y = ctx.outputs[0].f32();
  // y[o, t ft + a, h fs + b, w fs + d] = x[(((o ft + a) fs + b) fs + d) / repeats, t, h, w]
  for (int64_t o = 0; o < O; ++o)
    for (int64_t a = 0; a < ft; ++a)
      for (int64_t b = 0; b < fs; ++b)
        for (int64_t d = 0; d < fs; ++d) {
          const int64_t c = (((o * ft + a) * fs + b) * fs + d) / repeats;
          for (int64_t t = 0; t < T; ++t)
            for (int64_t h = 0; h < H; ++h)
              for (int64_t w = 0; w < W; ++w)
                y[((o * T * ft + t * ft + a) * H * fs + h * fs + b) * W * fs + w * fs + d] = X.f32()[((c * T + t) * H + h) * W + w];
        }
  return {};
}

}  // namespace

void define_space_time_depth(OpTable& t) {
  const std::vector<AttrSpec> attrs = {{"factor_t", AttrSpec::Int, 1}, {"factor_s", AttrSpec::Int, 2}, {"channels", AttrSpec::Int, nullptr}};
  t.define(checked(OpDef{
               .name = "space_time_to_depth",
               .inputs = {"x"},
               .attrs = attrs,
               .shape = down_shape,
               .tolerance = {1e-6, 1e-6},
               .fills = true,
               .doc = "space_time_to_depth(x [C, T, H, W]) -> [channels, ceil(T/ft), H/fs, W/fs]: blocks into channels "
                      "(zeros padded in front in time), groups of them averaged (Wan 2.2's AvgDown3D)",
           }),
           down_kernel);
  t.define(checked(OpDef{
               .name = "depth_to_space_time",
               .inputs = {"x"},
               .attrs = attrs,
               .shape = up_shape,
               .tolerance = {0, 0},
               .fills = true,
               .doc = "depth_to_space_time(x [C, T, H, W]) -> [channels, T ft, H fs, W fs]: channels repeated, then spread "
                      "into blocks of frames and pixels (Wan 2.2's DupUp3D)",
           }),
           up_kernel);
}

}  // namespace arch

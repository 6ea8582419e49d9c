// Sinusoidal embeddings, as diffusers computes them.
//
// timestep_embedding(t [n]) attrs dim, flip_sin_to_cos, downscale_freq_shift,
// scale, max_period -> [n, dim]: diffusers' get_timestep_embedding, in
// float32 as torch computes it: with half = dim / 2,
//   freq_k = exp(-ln(max_period) * k / (half - downscale_freq_shift)),
//   e = scale * t * freq, out = [sin e, cos e] ([cos e, sin e] flipped).
//
// sincos_2d(x [D, h, w]) attrs base_size, interpolation_scale -> [h * w, D]:
// the fixed 2-D position table of a patch embedding (DiT, SD3; MAE's
// recipe): for the patch at row i, column j, with grid coordinates
// c = index / (grid / base_size) / interpolation_scale,
//   out = [sin(c_j w), cos(c_j w), sin(c_i w), cos(c_i w)],
//   w_k = 1 / 10000^(k / (D / 4)), in double (as diffusers), rounded to f32.
// The column coordinate comes first: diffusers' meshgrid puts w first.
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> timestep_shape(std::span<const TypedShape> in, std::span<const bool>,
                                               const Attrs& attrs) {
  const int64_t dim = attr_int(attrs, "dim", 0);
  if (dim <= 0 || dim % 2) return error("timestep_embedding: dim must be positive and even, got " + std::to_string(dim));
  if (in[0].shape.size() != 1) return error("timestep_embedding: t must be [n], got " + shape_str(in[0].shape));
  if (in[0].dtype != DType::F32 && in[0].dtype != DType::I32)
    return error("timestep_embedding: t must be F32 or I32, got " + std::string(dtype_name(in[0].dtype)));
  const int64_t half = dim / 2;
  if (double(half) - attr_float(attrs, "downscale_freq_shift", 1.0) == 0.0)
    return error("timestep_embedding: half the dim (" + std::to_string(half) + ") equals downscale_freq_shift");
  return one_output(Shape{in[0].shape[0], Dim::of(dim)});
}

Status timestep_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0].data) return kernel_error(ctx, "timestep_embedding", "input t is missing");
  const Tensor& T = ctx.inputs[0];
  if (T.dtype != DType::F32 && T.dtype != DType::I32)
    return kernel_error(ctx, "timestep_embedding", "t must be F32 or I32");
  const int64_t dim = attr_int(ctx.attrs, "dim", 0), half = dim / 2, n = T.numel();
  ARCH_TRY_STATUS(expect_output(ctx, "timestep_embedding", 0, Dims{n, dim}));
  const bool flip = attr_bool(ctx.attrs, "flip_sin_to_cos", false);
  const float shift = float(attr_float(ctx.attrs, "downscale_freq_shift", 1.0));
  const float scale = float(attr_float(ctx.attrs, "scale", 1.0));
  const float log_period = float(std::log(attr_float(ctx.attrs, "max_period", 10000.0)));
  for (int64_t r = 0; r < n; ++r) {
    const float t = T.dtype == DType::I32 ? float(T.i32()[r]) : T.f32()[r];
    float* out = ctx.outputs[0].f32() + r * dim;
    for (int64_t k = 0; k < half; ++k) {
      // exponent = -ln(max_period) * k / (half - shift), in float32
      const float exponent = (-log_period * float(k)) / (float(half) - shift);
      const float e = scale * (t * std::exp(exponent));
      out[flip ? half + k : k] = std::sin(e);
      out[flip ? k : half + k] = std::cos(e);
    }
  }
  return {};
}

Result<std::vector<TypedShape>> sincos_2d_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.size() != 3) return error("sincos_2d: x must be [D, h, w] (a patch grid), got " + shape_str(x));
  if (!x[0].concrete() || x[0].n % 4) return error("sincos_2d: D must be a multiple of 4, got " + dim_str(x[0]));
  if (attr_float(attrs, "interpolation_scale", 1.0) <= 0) return error("sincos_2d: interpolation_scale must be positive");
  if (x[1].concrete() && x[2].concrete()) return one_output(Shape{Dim::of(x[1].n * x[2].n), x[0]});
  return one_output(Shape{Dim::dyn(), x[0]});
}

Status sincos_2d_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty() || !ctx.inputs[0].data) return kernel_error(ctx, "sincos_2d", "input x is missing");
  const Tensor& X = ctx.inputs[0];
  if (X.shape.size() != 3 || X.dim(0) % 4) return kernel_error(ctx, "sincos_2d", "x must be [D, h, w] with D a multiple of 4");
  const int64_t D = X.dim(0), h = X.dim(1), w = X.dim(2), quarter = D / 4;
  ARCH_TRY_STATUS(expect_output(ctx, "sincos_2d", 0, Dims{h * w, D}));
  const double base = double(attr_int(ctx.attrs, "base_size", 0));
  const double interp = attr_float(ctx.attrs, "interpolation_scale", 1.0);
  // A grid index as diffusers scales it (float32 arithmetic, as its arange).
  auto coordinate = [&](int64_t index, int64_t grid) {
    const float per = base > 0 ? float(double(grid) / base) : 1.0f;
    return double(float(float(index) / per) / float(interp));
  };
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < w; ++j) {
      float* out = ctx.outputs[0].f32() + (i * w + j) * D;
      const double cj = coordinate(j, w), ci = coordinate(i, h);
      for (int64_t k = 0; k < quarter; ++k) {
        const double omega = 1.0 / std::pow(10000.0, double(k) / double(quarter));
        out[k] = float(std::sin(cj * omega));
        out[quarter + k] = float(std::cos(cj * omega));
        out[2 * quarter + k] = float(std::sin(ci * omega));
        out[3 * quarter + k] = float(std::cos(ci * omega));
      }
    }
  return {};
}

}  // namespace

void define_sinusoids(OpTable& t) {
  t.define(checked(OpDef{
               .name = "timestep_embedding",
               .inputs = {"t"},
               .attrs = {{"dim", AttrSpec::Int, nullptr},
                         {"flip_sin_to_cos", AttrSpec::Bool, false},
                         {"downscale_freq_shift", AttrSpec::Float, 1.0},
                         {"scale", AttrSpec::Float, 1.0},
                         {"max_period", AttrSpec::Float, 10000.0}},
               .shape = timestep_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "timestep_embedding(t [n]) -> [n, dim]: diffusers' sinusoids of t (f32 or i32): [sin, cos] of "
                      "scale * t * exp(-ln(max_period) k / (dim/2 - downscale_freq_shift)); flip_sin_to_cos: [cos, sin]",
           }),
           timestep_kernel);
  t.define(checked(OpDef{
               .name = "sincos_2d",
               .inputs = {"x"},
               .attrs = {{"base_size", AttrSpec::Int, 0}, {"interpolation_scale", AttrSpec::Float, 1.0}},
               .shape = sincos_2d_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "sincos_2d(x [D, h, w]) -> [h*w, D]: the fixed 2-D sin-cos position table of a patch grid "
                      "(column coordinate first), coordinates scaled by base_size and interpolation_scale",
           }),
           sincos_2d_kernel);
}

}  // namespace arch

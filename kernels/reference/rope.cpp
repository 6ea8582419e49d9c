// rope(x [seq, H, D], positions [seq] i32) -> [seq, H, D]: rotate the first
// rope_dim features of each head by angle pos * inv_freq[j]; the rest pass
// through. Layout "rotate_half" (pairs j, j + d/2) or interleaved (2j, 2j+1).
#include "kernels/reference/rope.h"

#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// A number field of the rope_scaling object, or an error naming it.
Result<double> scaling_field(const Attrs& scaling, const std::string& type, const char* key) {
  auto it = scaling.find(key);
  if (it == scaling.end() || !it->is_number())
    return error("rope_scaling type '" + type + "' needs a number '" + key + "'");
  return it->get<double>();
}

// The rope_scaling type: "default" when absent.
Result<std::string> scaling_type(const Attrs& scaling) {
  if (scaling.is_null()) return std::string("default");
  if (!scaling.is_object()) return error("rope_scaling must be an object or null, got " + scaling.dump());
  for (const char* key : {"rope_type", "type"}) {
    auto it = scaling.find(key);
    if (it == scaling.end() || it->is_null()) continue;
    if (!it->is_string()) return error("rope_scaling '" + std::string(key) + "' must be a string");
    return it->get<std::string>();
  }
  return std::string("default");
}

// The rope_dim attribute resolved against the head size D.
Result<int64_t> resolve_rope_dim(int64_t rope_dim, int64_t D) {
  int64_t d = rope_dim == 0 ? D : rope_dim;
  if (d <= 0 || d % 2 != 0 || d > D)
    return error("rope_dim " + std::to_string(rope_dim) + " must be even, positive and <= the head size " +
                 std::to_string(D));
  return d;
}

}  // namespace

Result<std::vector<float>> rope_inv_freq(double theta, int64_t d, const Attrs& scaling) {
  if (!(theta > 0)) return error("rope theta must be positive, got " + std::to_string(theta));
  ARCH_TRY(std::string type, scaling_type(scaling));
  std::vector<float> inv(size_t(d / 2));
  // inv[j] = 1 / theta^(2j / d): exponent, power and reciprocal in float32
  const float base = float(theta);
  for (int64_t j = 0; j < d / 2; ++j) {
    float e = float(2 * j) / float(d);
    float p = float(std::pow(double(base), double(e)));
    inv[j] = 1.0f / p;
  }
  if (type == "default") return inv;
  if (type == "linear") {
    ARCH_TRY(double factor, scaling_field(scaling, type, "factor"));
    for (float& f : inv) f = f / float(factor);  // inv /= factor
    return inv;
  }
  if (type == "llama3") {
    ARCH_TRY(double factor, scaling_field(scaling, type, "factor"));
    ARCH_TRY(double low, scaling_field(scaling, type, "low_freq_factor"));
    ARCH_TRY(double high, scaling_field(scaling, type, "high_freq_factor"));
    ARCH_TRY(double old_ctx, scaling_field(scaling, type, "original_max_position_embeddings"));
    if (!(high > low)) return error("rope_scaling 'llama3': high_freq_factor must exceed low_freq_factor");
    // Long wavelengths (low frequencies) are slowed by `factor`, short ones
    // kept, and those between blended by how many turns fit in old_ctx.
    // Float32 throughout, each step rounded where torch rounds it (a python
    // scalar over a tensor is reciprocal(tensor) * scalar).
    const float low_wl = float(old_ctx / low);
    const float high_wl = float(old_ctx / high);
    const float factor_f = float(factor);
    for (float& f : inv) {
      float wavelen = (1.0f / f) * float(2 * M_PI);  // 2 pi / inv
      if (wavelen > low_wl) {
        f = f / factor_f;
      } else if (!(wavelen < high_wl)) {
        float smooth = ((1.0f / wavelen) * float(old_ctx) - float(low)) / float(high - low);
        f = (1.0f - smooth) * f / factor_f + smooth * f;
      }
    }
    return inv;
  }
  return error("rope_scaling type '" + type + "' is not supported yet");
}

void rope_cos_sin(int32_t pos, float inv_freq, float* c, float* s) {
  float angle = float(pos) * inv_freq;  // float32, as torch's position @ inv_freq
  *c = float(std::cos(double(angle)));
  *s = float(std::sin(double(angle)));
}

static Result<std::vector<TypedShape>> rope_shape(std::span<const TypedShape> in,
                                                  std::span<const bool>, const Attrs& attrs) {
  const Shape& x = in[0].shape;
  const TypedShape& pos = in[1];
  if (x.size() != 3) return error("rope: x must be [seq, heads, head_dim], got " + shape_str(x));
  if (pos.dtype != DType::I32)
    return error("rope: positions must be I32, got " + std::string(dtype_name(pos.dtype)));
  if (pos.shape.size() != 1 || pos.shape[0] != x[0])
    return error("rope: positions " + shape_str(pos.shape) + " must be [" + dim_str(x[0]) + "]" +
                 " to match x " + shape_str(x));
  if (!x[2].concrete()) return error("rope: head_dim must be concrete, got " + shape_str(x));
  auto d = resolve_rope_dim(attr_int(attrs, "rope_dim", 0), x[2].n);
  if (!d.ok()) return error("rope: " + d.error().message);
  // Refuse an unsupported rope_scaling now rather than at the first call.
  auto inv = rope_inv_freq(attr_float(attrs, "theta", 10000.0), *d, attr_json(attrs, "scaling"));
  if (!inv.ok()) return error("rope: " + inv.error().message);
  return one_output(x);
}

static Status rope_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "rope", 0));
  ARCH_TRY_STATUS(expect_i32(ctx, "rope", 1));
  const Tensor& X = ctx.inputs[0];    // [S, H, D]
  const Tensor& P = ctx.inputs[1];    // [S]
  if (X.shape.size() != 3 || P.shape.size() != 1 || P.dim(0) != X.dim(0))
    return kernel_error(ctx, "rope", "x " + dims_str(X.shape) + " and positions " + dims_str(P.shape) +
                                         " must be [seq, heads, head_dim] and [seq]");
  ARCH_TRY_STATUS(expect_output(ctx, "rope", 0, X.shape));
  int64_t S = X.dim(0), H = X.dim(1), D = X.dim(2);
  auto d_or = resolve_rope_dim(attr_int(ctx.attrs, "rope_dim", 0), D);
  if (!d_or.ok()) return kernel_error(ctx, "rope", d_or.error().message);
  const int64_t d = *d_or, half = d / 2;
  auto inv_or = rope_inv_freq(attr_float(ctx.attrs, "theta", 10000.0), d, attr_json(ctx.attrs, "scaling"));
  if (!inv_or.ok()) return kernel_error(ctx, "rope", inv_or.error().message);
  const std::vector<float>& inv = *inv_or;
  const bool interleaved = attr_bool(ctx.attrs, "interleaved", false);
  std::vector<float> c(half), s(half);
  for (int64_t t = 0; t < S; ++t) {
    for (int64_t j = 0; j < half; ++j) rope_cos_sin(P.i32()[t], inv[j], &c[j], &s[j]);
    for (int64_t h = 0; h < H; ++h) {
      const float* x = X.f32() + (t * H + h) * D;
      float* y = ctx.outputs[0].f32() + (t * H + h) * D;
      for (int64_t j = 0; j < half; ++j) {
        // (y_a, y_b) = (x_a cos - x_b sin, x_b cos + x_a sin) for pair (a, b)
        int64_t a = interleaved ? 2 * j : j;
        int64_t b = interleaved ? 2 * j + 1 : j + half;
        y[a] = x[a] * c[j] - x[b] * s[j];
        y[b] = x[b] * c[j] + x[a] * s[j];
      }
      for (int64_t i = d; i < D; ++i) y[i] = x[i];  // past rope_dim: unchanged
    }
  }
  return {};
}

void define_rope(OpTable& t) {
  t.define(checked(OpDef{
               .name = "rope",
               .inputs = {"x", "positions"},
               .attrs = {{"theta", AttrSpec::Float, nullptr},
                         {"rope_dim", AttrSpec::Int, 0},
                         {"scaling", AttrSpec::Json, nullptr},
                         {"interleaved", AttrSpec::Bool, false}},
               .shape = rope_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "rope(x [seq, H, D], positions [seq] i32) -> [seq, H, D]: rotary embedding of the first rope_dim features (0: all)",
           }),
           rope_kernel);
}

}  // namespace arch

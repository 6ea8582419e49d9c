// rope(x [seq, H, D], positions [seq] i32) -> [seq, H, D]: rotate the first
// rope_dim features of each head by angle pos * inv_freq[j]; the rest pass
// through. Layout "rotate_half" (pairs j, j + d/2) or interleaved (2j, 2j+1).
// cos and sin are scaled by the rope_scaling's attention factor (yarn).
#include "kernels/reference/rope.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

// base^(2j / d) as torch computes `base ** (arange(0, d, 2).float() / d)`
// with base a float32 (a Python float is rounded to float32 first): the
// exponent float(2j) / float(d), the power rounded to float32 from a double
// evaluation.
float rope_power(float base, int64_t j, int64_t d) {
  float e = float(2 * j) / float(d);
  return float(std::pow(double(base), double(e)));
}

namespace {

// A number field of the rope_scaling object, or an error naming it.
Result<double> scaling_field(const Attrs& scaling, const std::string& type, const char* key) {
  auto it = scaling.find(key);
  if (it == scaling.end() || !it->is_number())
    return error("rope_scaling type '" + type + "' needs a number '" + key + "'");
  return it->get<double>();
}

// An optional number field: absent or null gives nullopt (Python's
// rope_scaling.get(key) is None); anything else but a number is an error.
Result<std::optional<double>> optional_field(const Attrs& scaling, const std::string& type, const char* key) {
  auto it = scaling.find(key);
  if (it == scaling.end() || it->is_null()) return std::optional<double>();
  if (!it->is_number())
    return error("rope_scaling type '" + type + "': '" + key + "' must be a number, got " + it->dump());
  return std::optional<double>(it->get<double>());
}

// Python truthiness of an optional number (None and 0 are false), as in
// `rope_scaling.get(key) or default`.
bool truthy(const std::optional<double>& v) { return v && *v != 0; }

// The rope_scaling type: "default" when absent.
Result<std::string> scaling_type(const Attrs& scaling) {
  if (scaling.is_null()) return std::string("default");
  if (!scaling.is_object()) return error("rope_scaling must be an object or null, got " + scaling.dump());
  for (const char* key : {"rope_type", "type"}) {
    auto it = scaling.find(key);
    if (it == scaling.end() || it->is_null()) continue;
    if (!it->is_string()) return error("rope_scaling '" + std::string(key) + "' must be a string");
    // "su": the first Phi-3-128k checkpoints' name for LongRoPE.
    if (it->get<std::string>() == "su") return std::string("longrope");
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

// inv[j] = 1 / base^(2j / d): power and reciprocal in float32.
std::vector<float> plain_inv_freq(float base, int64_t d) {
  std::vector<float> inv(size_t(d / 2));
  for (int64_t j = 0; j < d / 2; ++j) inv[j] = 1.0f / rope_power(base, j, d);
  return inv;
}

// max_position_embeddings for "dynamic": the config's; when that is unknown
// (0), the object's original_max_position_embeddings stands in (transformers
// would use its config class's default, which a template cannot know).
Result<double> known_max_positions(const Attrs& scaling, const std::string& type, int64_t max_pos) {
  if (max_pos > 0) return double(max_pos);
  ARCH_TRY(auto orig, optional_field(scaling, type, "original_max_position_embeddings"));
  if (truthy(orig) && *orig > 0) return *orig;
  return error("rope_scaling type '" + type +
               "' needs the config's max_position_embeddings (rope attribute max_position_embeddings "
               "is 0, unknown) or an 'original_max_position_embeddings' in rope_scaling");
}

// _compute_dynamic_ntk_parameters as dynamic_rope_update drives it. The
// model starts with the frequencies computed for seq_len = max_pos (Python
// scalars, base unchanged up to rounding), and recomputes them whenever a
// call's max(position_ids) + 1 exceeds max_pos, with seq_len a torch integer
// tensor, so the new base is a float32 chain. (transformers reads the
// config's max_position_embeddings here, never the object's
// original_max_position_embeddings.)
Result<std::vector<float>> dynamic_inv_freq(double theta, int64_t d, const Attrs& scaling, const std::string& type,
                                            int64_t max_pos_attr, int64_t seq_len) {
  ARCH_TRY(double factor, scaling_field(scaling, type, "factor"));
  ARCH_TRY(double max_pos, known_max_positions(scaling, type, max_pos_attr));
  if (d <= 2) return error("rope_scaling type 'dynamic' needs rope_dim > 2, got " + std::to_string(d));
  const double exponent = double(d) / double(d - 2);
  if (!(double(seq_len) > max_pos)) {
    // seq_len = max_position_embeddings, all in double as Python does
    double base = theta * std::pow(factor * max_pos / max_pos - (factor - 1), exponent);
    return plain_inv_freq(float(base), d);
  }
  // factor * seq_len / max_pos - (factor - 1), ** (d / (d - 2)), theta * it:
  // each a float32 tensor op, the Python scalars rounded to float32.
  float r = float(factor) * float(seq_len);
  r = r / float(max_pos);
  r = r - float(factor - 1);
  float grown = float(std::pow(double(r), double(float(exponent))));
  float base = float(theta) * grown;
  return plain_inv_freq(base, d);
}

// _compute_yarn_parameters (transformers 4.56): factor is always the
// object's `factor`; original_max_position_embeddings is the object's, else
// the config's max_position_embeddings (it only places the correction range).
Result<RopeFrequencies> yarn_frequencies(double theta, int64_t d, const Attrs& scaling, const std::string& type,
                                         int64_t max_pos_attr) {
  ARCH_TRY(double factor, scaling_field(scaling, type, "factor"));
  ARCH_TRY(auto attention, optional_field(scaling, type, "attention_factor"));
  ARCH_TRY(auto mscale, optional_field(scaling, type, "mscale"));
  ARCH_TRY(auto mscale_all_dim, optional_field(scaling, type, "mscale_all_dim"));
  ARCH_TRY(auto fast, optional_field(scaling, type, "beta_fast"));
  ARCH_TRY(auto slow, optional_field(scaling, type, "beta_slow"));
  // rope_scaling.get("original_max_position_embeddings") or config.max_position_embeddings
  ARCH_TRY(auto orig_field, optional_field(scaling, type, "original_max_position_embeddings"));
  double orig;
  if (truthy(orig_field))
    orig = *orig_field;
  else if (max_pos_attr > 0)
    orig = double(max_pos_attr);
  else
    return error("rope_scaling type 'yarn' needs an 'original_max_position_embeddings' in rope_scaling or the "
                 "config's max_position_embeddings (rope attribute max_position_embeddings is 0, unknown)");
  bool truncate = true;  // rope_scaling.get("truncate", True), then `if truncate:`
  if (auto it = scaling.find("truncate"); it != scaling.end()) {
    if (it->is_null()) truncate = false;
    else if (it->is_boolean()) truncate = it->get<bool>();
    else if (it->is_number()) truncate = it->get<double>() != 0;
    else return error("rope_scaling type 'yarn': 'truncate' must be a bool, got " + it->dump());
  }

  // The attention factor, in double as Python computes it.
  auto get_mscale = [&](double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; };
  double att;
  if (attention)
    att = *attention;
  else if (truthy(mscale) && truthy(mscale_all_dim))
    att = get_mscale(factor, *mscale) / get_mscale(factor, *mscale_all_dim);
  else
    att = get_mscale(factor, 1.0);

  // The correction range, in double: the dimensions where beta_fast and
  // beta_slow rotations fit in the original length, clamped to [0, d - 1].
  const double beta_fast = truthy(fast) ? *fast : 32, beta_slow = truthy(slow) ? *slow : 1;
  auto correction_dim = [&](double rotations) {
    return (double(d) * std::log(orig / (rotations * 2 * M_PI))) / (2 * std::log(theta));
  };
  double low = correction_dim(beta_fast), high = correction_dim(beta_slow);
  if (truncate) {
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, double(d - 1));
  if (low == high) high += 0.001;  // "prevent singularity"

  // The blend, in float32 like torch: a linear ramp over [low, high] weighs
  // interpolation (1 / (factor * pos_freq)) against extrapolation (1 / pos_freq).
  const float low_f = float(low), span_f = float(high - low), factor_f = float(factor);
  const float base = float(theta);
  RopeFrequencies out;
  out.inv_freq.resize(size_t(d / 2));
  for (int64_t j = 0; j < d / 2; ++j) {
    float ramp = (float(j) - low_f) / span_f;
    ramp = std::min(std::max(ramp, 0.0f), 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    const float pos_freq = rope_power(base, j, d);
    const float extrapolation = 1.0f / pos_freq;
    const float interpolation = 1.0f / (factor_f * pos_freq);
    const float a = interpolation * (1.0f - extrapolation_factor);
    const float b = extrapolation * extrapolation_factor;
    out.inv_freq[j] = a + b;
  }
  out.attention_factor = float(att);
  return out;
}

// The length LongRoPE's factor sets switch at, and its factor: the config's
// original_max_position_embeddings where it has one (Phi-3: factor =
// max_position_embeddings / it), else the object's (transformers 5.x
// standardises it there) with the object's factor, else
// max_position_embeddings itself.
struct LongRopeSpan {
  double original = 0;
  std::optional<double> factor;
};
Result<LongRopeSpan> longrope_span(const Attrs& scaling, const std::string& type, int64_t max_pos,
                                   int64_t original_max_pos) {
  ARCH_TRY(auto factor, optional_field(scaling, type, "factor"));
  ARCH_TRY(auto orig_field, optional_field(scaling, type, "original_max_position_embeddings"));
  if (original_max_pos > 0) {
    if (max_pos <= 0)
      return error("rope_scaling type 'longrope' with original_max_position_embeddings needs the config's "
                   "max_position_embeddings (rope attribute max_position_embeddings is 0, unknown)");
    return LongRopeSpan{double(original_max_pos), double(max_pos) / double(original_max_pos)};
  }
  if (truthy(orig_field) && *orig_field > 0) return LongRopeSpan{*orig_field, factor};
  if (max_pos > 0) return LongRopeSpan{double(max_pos), factor};
  return error("rope_scaling type 'longrope' needs original_max_position_embeddings (the config's or the "
               "object's) or the config's max_position_embeddings");
}

// _compute_longrope_parameters as longrope_frequency_update drives it:
// short_factor while the sequence is at most the original length, long_factor
// past it (for every position: rows cached before the switch must be
// recomputed, rope_history_changes_past); inv[j] = 1 / (factor[j] *
// theta^(2j / d)) in float32; cos and sin scaled by the attention factor
// sqrt(1 + ln(factor) / ln(original)) unless the object gives one.
Result<RopeFrequencies> longrope_frequencies(double theta, int64_t d, const Attrs& scaling, const std::string& type,
                                             int64_t max_pos, int64_t seq_len, int64_t original_max_pos) {
  ARCH_TRY(LongRopeSpan span, longrope_span(scaling, type, max_pos, original_max_pos));
  ARCH_TRY(auto attention, optional_field(scaling, type, "attention_factor"));
  const char* which = double(seq_len) > span.original ? "long_factor" : "short_factor";
  auto it = scaling.find(which);
  if (it == scaling.end() || !it->is_array() || it->size() != size_t(d / 2))
    return error("rope_scaling type 'longrope' needs '" + std::string(which) + "', a list of " +
                 std::to_string(d / 2) + " numbers (one per rotated pair of the " + std::to_string(d) +
                 " rope dims)");
  RopeFrequencies out;
  out.inv_freq.resize(size_t(d / 2));
  for (int64_t j = 0; j < d / 2; ++j) {
    const auto& f = (*it)[size_t(j)];
    if (!f.is_number() || !(f.get<double>() > 0))
      return error("rope_scaling type 'longrope': " + std::string(which) + "[" + std::to_string(j) +
                   "] must be a positive number, got " + f.dump());
    out.inv_freq[size_t(j)] = 1.0f / (float(f.get<double>()) * rope_power(float(theta), j, d));
  }
  double att = 1.0;
  if (attention)
    att = *attention;
  else if (span.factor && *span.factor > 1.0)
    att = std::sqrt(1.0 + std::log(*span.factor) / std::log(span.original));
  out.attention_factor = float(att);
  return out;
}

}  // namespace

bool rope_frequencies_read_seq_len(const Attrs& scaling) {
  auto type = scaling_type(scaling);
  return type.ok() && (*type == "dynamic" || *type == "longrope");
}

int64_t rope_frequencies_key(const Attrs& scaling, int64_t max_pos, int64_t original_max_pos, int64_t seq_len) {
  auto type = scaling_type(scaling);
  if (!type.ok()) return seq_len;
  if (*type == "longrope") {
    auto span = longrope_span(scaling, *type, max_pos, original_max_pos);
    return span.ok() ? int64_t(double(seq_len) > span->original) : seq_len;
  }
  if (*type == "dynamic") {
    auto known = known_max_positions(scaling, *type, max_pos);
    return known.ok() && !(double(seq_len) > *known) ? 0 : seq_len;
  }
  return 0;
}

int64_t rope_history_changes_past(const Attrs& scaling, int64_t max_pos, int64_t original_max_pos) {
  auto type = scaling_type(scaling);
  if (!type.ok() || *type != "longrope") return 0;
  auto span = longrope_span(scaling, *type, max_pos, original_max_pos);
  return span.ok() ? int64_t(span->original) : 0;
}

Result<RopeFrequencies> rope_frequencies(double theta, int64_t d, const Attrs& scaling, int64_t max_pos,
                                         int64_t seq_len, int64_t original_max_pos) {
  if (!(theta > 0)) return error("rope theta must be positive, got " + std::to_string(theta));
  ARCH_TRY(std::string type, scaling_type(scaling));
  RopeFrequencies out;
  if (type == "dynamic") {
    ARCH_TRY(out.inv_freq, dynamic_inv_freq(theta, d, scaling, type, max_pos, seq_len));
    return out;
  }
  if (type == "yarn") return yarn_frequencies(theta, d, scaling, type, max_pos);
  if (type == "longrope") return longrope_frequencies(theta, d, scaling, type, max_pos, seq_len, original_max_pos);
  if (type == "proportional") return proportional_rope_frequencies(theta, d, scaling);
  // inv[j] = 1 / theta^(2j / d): exponent, power and reciprocal in float32
  out.inv_freq = plain_inv_freq(float(theta), d);
  std::vector<float>& inv = out.inv_freq;
  if (type == "default") return out;
  if (type == "linear") {
    ARCH_TRY(double factor, scaling_field(scaling, type, "factor"));
    for (float& f : inv) f = f / float(factor);  // inv /= factor
    return out;
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
    return out;
  }
  return error("rope_scaling type '" + type + "' is not supported yet");
}

Result<std::vector<float>> rope_inv_freq(double theta, int64_t d, const Attrs& scaling, int64_t max_pos,
                                         int64_t seq_len, int64_t original_max_pos) {
  ARCH_TRY(RopeFrequencies f, rope_frequencies(theta, d, scaling, max_pos, seq_len, original_max_pos));
  return std::move(f.inv_freq);
}

void rope_cos_sin(int32_t pos, float inv_freq, float* c, float* s, float attention_factor) {
  float angle = float(pos) * inv_freq;  // float32, as torch's position @ inv_freq
  *c = float(std::cos(double(angle))) * attention_factor;  // emb.cos() * attention_scaling
  *s = float(std::sin(double(angle))) * attention_factor;
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
  // Refuse an unsupported or incomplete rope_scaling now rather than at the
  // first call.
  auto freqs = rope_frequencies(attr_float(attrs, "theta", 10000.0), *d, attr_json(attrs, "scaling"),
                                attr_int(attrs, "max_position_embeddings", 0), 0,
                                attr_int(attrs, "original_max_position_embeddings", 0));
  if (!freqs.ok()) return error("rope: " + freqs.error().message);
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
  // The sequence length seen so far, as transformers' dynamic_rope_update
  // takes it: max(position_ids) + 1 of this call, each sequence's own where
  // the rows are several sequences'. ("dynamic" and "longrope" only; rows
  // already in the KV cache keep the rotation they were given, unless the
  // session recomputes them: OpDef::history_changes_past.)
  const Attrs& scaling = attr_json(ctx.attrs, "scaling");
  std::vector<std::pair<int64_t, int64_t>> spans;  // [first row, end) sharing one seq_len
  if (ctx.sequences && rope_frequencies_read_seq_len(scaling))
    for (const auto& p : ctx.sequences->pieces) spans.push_back({p.row, p.row + p.rows});
  else
    spans.push_back({0, S});
  const bool interleaved = attr_bool(ctx.attrs, "interleaved", false);
  std::vector<float> c(half), s(half);
  for (auto [first, end] : spans) {
    int64_t seq_len = 0;
    for (int64_t t = first; t < end; ++t) seq_len = std::max(seq_len, int64_t(P.i32()[t]) + 1);
    auto freqs_or = rope_frequencies(attr_float(ctx.attrs, "theta", 10000.0), d, scaling,
                                     attr_int(ctx.attrs, "max_position_embeddings", 0), seq_len,
                                     attr_int(ctx.attrs, "original_max_position_embeddings", 0));
    if (!freqs_or.ok()) return kernel_error(ctx, "rope", freqs_or.error().message);
    const std::vector<float>& inv = freqs_or->inv_freq;
    const float attention_factor = freqs_or->attention_factor;
    for (int64_t t = first; t < end; ++t) {
      for (int64_t j = 0; j < half; ++j) rope_cos_sin(P.i32()[t], inv[j], &c[j], &s[j], attention_factor);
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
                         {"max_position_embeddings", AttrSpec::Int, 0},
                         {"original_max_position_embeddings", AttrSpec::Int, 0},
                         {"interleaved", AttrSpec::Bool, false}},
               .shape = rope_shape,
               .tolerance = {1e-5, 1e-6},
               .history_changes_past =
                   [](const Attrs& a) {
                     return rope_history_changes_past(attr_json(a, "scaling"), attr_int(a, "max_position_embeddings", 0),
                                                      attr_int(a, "original_max_position_embeddings", 0));
                   },
               .split = split_like_input0,
               .doc = "rope(x [seq, H, D], positions [seq] i32) -> [seq, H, D]: rotary embedding of the first rope_dim features (0: all); "
                      "scaling: the config's rope_scaling (default, linear, llama3, dynamic, yarn, longrope, proportional); "
                      "max_position_embeddings: the config's (0: unknown), for dynamic, yarn and longrope; "
                      "original_max_position_embeddings: the config's top-level one (Phi-3's; 0: none), for longrope",
           }),
           rope_kernel);
}

}  // namespace arch

// The "proportional" rope type (transformers 5.x
// _compute_proportional_rope_parameters, used by Gemma 4's full-attention
// layers): the rope op's scaling object {"rope_type": "proportional",
// "partial_rotary_factor": p, "factor": f}. Unlike a partial rope_dim, the
// rotation spans the whole rope_dim d with pairs (j, j + d/2): the first
// int(p * d // 2) pairs rotate at 1 / theta^(2j / d), the rest have frequency
// 0 (cos 1, sin 0: they pass through unchanged).
#include <cmath>

#include "kernels/reference/rope.h"

namespace arch {

namespace {

// scaling[key] as a number; absent or null gives `fallback` (Python's
// dict.get(key, fallback), where a stored null would not be usable either).
Result<double> number_or(const Attrs& scaling, const char* key, double fallback) {
  auto it = scaling.find(key);
  if (it == scaling.end() || it->is_null()) return fallback;
  if (!it->is_number())
    return error("rope_scaling type 'proportional': '" + std::string(key) + "' must be a number, got " + it->dump());
  return it->get<double>();
}

}  // namespace

Result<RopeFrequencies> proportional_rope_frequencies(double theta, int64_t d, const Attrs& scaling) {
  ARCH_TRY(double partial, number_or(scaling, "partial_rotary_factor", 1.0));
  ARCH_TRY(double factor, number_or(scaling, "factor", 1.0));
  if (!(partial >= 0))
    return error("rope_scaling type 'proportional': partial_rotary_factor must be >= 0, got " + std::to_string(partial));
  if (factor == 0) return error("rope_scaling type 'proportional': factor must not be 0");
  // rope_angles = int(partial_rotary_factor * head_dim // 2): float floor
  // division, then truncation.
  const int64_t angles = int64_t(std::floor(partial * double(d) / 2.0));
  if (angles > d / 2)
    return error("rope_scaling type 'proportional': partial_rotary_factor " + std::to_string(partial) +
                 " rotates " + std::to_string(angles) + " pairs, more than the " + std::to_string(d / 2) +
                 " of rope_dim " + std::to_string(d));
  RopeFrequencies out;
  out.inv_freq.assign(size_t(d / 2), 0.0f);  // the "nope" pairs: frequency 0
  const float base = float(theta);
  // 1 / base^(arange(0, 2 * angles, 2) / d), then / factor, in float32
  for (int64_t j = 0; j < angles; ++j) out.inv_freq[j] = (1.0f / rope_power(base, j, d)) / float(factor);
  return out;
}

}  // namespace arch

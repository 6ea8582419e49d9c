#include "importer/checkpoint/gguf_rope_freqs.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace arch {

namespace {

struct Llama3 {
  double factor, low, high, old_ctx;
};

// The divisor llama3 scaling gives a pair of wavelength `wavelen`.
double divisor(const Llama3& s, double wavelen) {
  if (wavelen < s.old_ctx / s.high) return 1;
  if (wavelen > s.old_ctx / s.low) return s.factor;
  const double smooth = (s.old_ctx / wavelen - s.low) / (s.high - s.low);
  return 1 / ((1 - smooth) / s.factor + smooth);
}

bool reproduces(const Llama3& s, const std::vector<double>& wavelen, const float* v) {
  for (size_t i = 0; i < wavelen.size(); ++i)
    if (!(std::abs(v[i] - divisor(s, wavelen[i])) <= 1e-4 * divisor(s, wavelen[i]))) return false;
  return true;
}

// Parameters giving these divisors. They are not unique (only old_ctx / low
// and old_ctx / high matter): low is taken as 1, as in every release.
// Blended pairs fix the rest (smooth is linear in 1 / wavelength); without
// them any boundary between the kept and the slowed pairs does.
Llama3 fit(const std::vector<double>& wavelen, const float* v, double factor) {
  Llama3 s{factor, 1, 4, 8192};  // Meta's releases
  if (reproduces(s, wavelen, v)) return s;
  std::vector<std::pair<double, double>> blend;  // (1 / wavelength, smooth)
  double longest_kept = 0, shortest_slowed = INFINITY;
  for (size_t i = 0; i < wavelen.size(); ++i) {
    if (std::abs(v[i] - 1) <= 1e-6) longest_kept = std::max(longest_kept, wavelen[i]);
    else if (std::abs(v[i] - factor) <= 1e-6 * factor) shortest_slowed = std::min(shortest_slowed, wavelen[i]);
    else blend.emplace_back(1 / wavelen[i], (1 / double(v[i]) - 1 / factor) / (1 - 1 / factor));
  }
  if (blend.size() >= 2) {  // smooth = a x + b, a = old_ctx / (high - 1), b = -1 / (high - 1)
    const auto [x0, y0] = blend.front();
    const auto [x1, y1] = blend.back();
    const double a = (y1 - y0) / (x1 - x0), b = y0 - a * x0;
    s.high = 1 - 1 / b;
    s.old_ctx = -a / b;
  } else if (blend.size() == 1) {  // high stays 4: smooth = (old_ctx x - 1) / 3
    s.old_ctx = (3 * blend[0].second + 1) / blend[0].first;
  } else if (std::isfinite(shortest_slowed)) {  // the boundaries just below the shortest slowed pair
    s.old_ctx = shortest_slowed * (1 - 1e-9);
    s.high = std::max(4.0, s.old_ctx / (longest_kept * (1 + 1e-9)) + 1e-9);
  }
  return s;
}

}  // namespace

Result<nlohmann::json> llama3_rope_scaling(const Tensor& divisors, double theta, int64_t head_dim,
                                           const std::string& where) {
  const Tensor d = to_f32(divisors);
  const int64_t n = d.numel();
  if (head_dim <= 0 || n != head_dim / 2)
    return error(where + ": " + std::to_string(n) + " RoPE frequency divisors for a head of " +
                 std::to_string(head_dim) + " (expected one per rotated pair)");
  const float* v = d.f32();
  const double factor = *std::max_element(v, v + n);
  if (!(factor >= 1) || !std::isfinite(factor) || std::any_of(v, v + n, [](float x) { return !(x >= 1); }))
    return error(where + ": RoPE frequency divisors must be numbers of at least 1");
  if (factor == 1) return nlohmann::json(nullptr);  // no scaling at all
  std::vector<double> wavelen;
  for (int64_t i = 0; i < n; ++i) wavelen.push_back(2 * M_PI * std::pow(theta, double(2 * i) / double(head_dim)));
  const Llama3 s = fit(wavelen, v, factor);
  if (!reproduces(s, wavelen, v))
    return error(where + ": these RoPE frequency divisors are not llama3 rope scaling's (no factor, low and high "
                 "frequency factors and context reproduce them): the model's frequencies are not read");
  return nlohmann::json{{"rope_type", "llama3"}, {"factor", s.factor}, {"low_freq_factor", s.low},
                        {"high_freq_factor", s.high}, {"original_max_position_embeddings", s.old_ctx}};
}

}  // namespace arch

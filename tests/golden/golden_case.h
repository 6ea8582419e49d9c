// A golden case from ../shared/golden: the checkpoint, its inputs and what
// Hugging Face transformers computed for them.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"
#include "tests/shared_data.h"

namespace arch::testing {

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

struct Compare {
  double max_abs = 0;      // max |out - ref|
  double ref_max = 0;      // max |ref|
  double bound = 0;        // allowed max_abs
  int64_t worst = -1;      // flat index of the worst element
  bool ok() const { return max_abs <= bound; }
};

// The golden README's float32 rule: max|out - ref| <= 1e-4 * max|ref| + 1e-5.
inline Compare compare_f32(const float* out, const float* ref, int64_t n, double rel = 1e-4,
                           double abs = 1e-5) {
  Compare c;
  for (int64_t i = 0; i < n; ++i) c.ref_max = std::max(c.ref_max, double(std::abs(ref[i])));
  for (int64_t i = 0; i < n; ++i) {
    double d = std::abs(double(out[i]) - double(ref[i]));
    if (!(d <= c.max_abs)) {  // also catches NaN
      c.max_abs = std::isnan(d) ? INFINITY : d;
      c.worst = i;
    }
  }
  c.bound = rel * c.ref_max + abs;
  return c;
}

// The relative tolerance of the golden README's rule for one tensor of a
// case: 1e-4, "about 3x the worst observed float32-vs-float64 deviation",
// or 3x this case's own recorded deviation (expected.json f32_vs_f64) where
// that is larger: the rule's derivation applied to the case.
inline double grounded_rel(const std::string& dir, const std::string& tensor) {
  const nlohmann::json j = read_json(dir + "/expected.json");
  const nlohmann::json* d = j.contains("f32_vs_f64") && j["f32_vs_f64"].contains(tensor) ? &j["f32_vs_f64"][tensor] : nullptr;
  const double own = d && (*d).contains("rel_to_max") ? (*d)["rel_to_max"].get<double>() : 0.0;
  return std::max(1e-4, 3 * own);
}

}  // namespace arch::testing

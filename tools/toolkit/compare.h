// Comparing a model with a golden directory (../shared/golden/<case>):
// every tensor transformers stored in expected.safetensors, stacked ones
// (layer_outputs) slice by slice so the first diverging layer is named, and
// for causal LMs the greedy tokens of expected.json.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/model.h"

namespace arch {

struct TensorDiff {
  std::string name;     // "layer_outputs[3]", "logits"
  double max_abs = 0;   // max |out - ref|
  double ref_max = 0;   // max |ref|
  double bound = 0;     // allowed: rel * ref_max + abs
  bool ok() const { return max_abs <= bound; }
};

struct CompareReport {
  std::vector<TensorDiff> tensors;        // in a stable order: stacked slices in index order
  std::vector<std::string> missing;       // expected tensors the model does not output
  // Expected tensors of a part the model runs only as far as it reads it
  // (LLaVA's tower to vision_feature_layer): not computed, not a failure.
  std::vector<std::string> not_computed;
  std::vector<int32_t> want_tokens, got_tokens;  // greedy, where expected.json has them
  const TensorDiff* first_failure() const;
  bool ok() const;
};

// The golden README's float32 rule: max|out - ref| <= rel * max|ref| + abs.
struct CompareTolerance {
  double rel = 1e-4;
  double abs = 1e-5;
};

Result<CompareReport> compare_with_golden(const Model& m, const std::string& golden_dir,
                                          const CompareTolerance& tol = {});

// A golden case's inputs as forward() takes them (inputs.json ids,
// inputs.safetensors tensors).
Result<std::map<std::string, Tensor>> golden_inputs(const std::string& golden_dir);

}  // namespace arch

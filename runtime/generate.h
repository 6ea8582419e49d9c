// Generation: a prompt chunk, then one decode step per new token, each
// token chosen by the sampler from the last row of logits.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "runtime/model.h"
#include "runtime/sampler.h"

namespace arch {

struct GenerateOptions {
  int max_new_tokens = 16;
  SamplingOptions sampling;
  std::vector<int32_t> stop_ids;                    // stop after drawing one of these
  std::function<void(int32_t)> on_token;           // streaming: called per new token
  CheckStats* check = nullptr;                      // --check: compare fast steps with the reference
};

struct GenerateResult {
  std::vector<int32_t> tokens;   // the new tokens only
  std::string stop_reason;       // "length" or "eos"
  double prompt_seconds = 0;
  double decode_seconds = 0;
};

Result<GenerateResult> generate(const Model& m, const std::vector<int32_t>& prompt,
                                const GenerateOptions& opt);

// The config's eos_token_id (an int or a list), as stop ids.
std::vector<int32_t> eos_ids(const Model& m);

}  // namespace arch

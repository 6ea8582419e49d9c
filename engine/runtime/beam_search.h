// Beam search over a decoder's token graph: `width` hypotheses, each in a
// session of its own holding the same encoder state; each step every
// hypothesis's processed logits give its best width + 1 continuations,
// the best `width` of all go on (one reaching `eot` is finished), and a
// hypothesis that takes over another's history rewinds its session to what
// they share and replays the rest. The best finished one by average
// log-probability wins.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/runtime/session.h"

namespace arch {

struct BeamResult {
  std::vector<int32_t> tokens;   // after the prompt, the end token included where reached
  double sum_logprob = 0;
};

using LogitsProcessor = std::function<void(std::span<float> logits, const std::vector<int32_t>& seq)>;

// `sessions`: at least `width`, reset here; `state`: what each session's
// first step takes (Session::begin).
Result<BeamResult> beam_search(std::vector<std::unique_ptr<Session>>& sessions, const NamedTensors& state,
                               const std::vector<int32_t>& prompt, int width, int max_new, int32_t eot,
                               const LogitsProcessor& process);

}  // namespace arch

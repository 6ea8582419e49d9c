// The constraints transformers' generate puts on each next token of a
// sequence-to-sequence model, as its generation_config.json sets them:
// no repeated n-gram, bad words never generated (Marian's pad), no end
// before min_length, a forced first token (the target language:
// forced_bos_token_id) and a forced end at max_length. Each bans by
// setting scores to -inf (a forced token: every other one), so they apply
// alike to raw logits (greedy's argmax) and to log-probabilities (beam
// search, which transformers runs them on, unrenormalised).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch {

struct GenerationRules {
  int no_repeat_ngram_size = 0;
  std::vector<std::vector<int32_t>> bad_words_ids;
  int min_length = 0;                 // decoder tokens, the start included
  int max_length = 0;                 // likewise; 0: none (no forced end)
  std::vector<int32_t> eos;           // what min_length holds back (a model's eos_ids)
  std::optional<int32_t> forced_bos_token_id, forced_eos_token_id;

  // `seq`: the whole decoder sequence so far, its start token first.
  void apply(std::span<float> scores, const std::vector<int32_t>& seq) const;
};

// From generation_config.json (then config.json) fields of those names;
// errors name a field of the wrong type. `eos` is left to the caller
// (eos_ids: the config's, the generation config's, the tokenizer's).
Result<GenerationRules> generation_rules(const nlohmann::json& generation_config, const nlohmann::json& config);

}  // namespace arch

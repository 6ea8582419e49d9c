// Sequence-to-sequence generation as people translate and summarise with
// it: the encoder once, then greedy decoding or beam search (transformers'
// flavour) from the decoder's start token, under the constraints and
// settings the checkpoint's generation_config.json gives (num_beams,
// length_penalty, no_repeat_ngram_size, early_stopping, bad_words_ids,
// min/max_length, forced first and last tokens), each overridable.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "engine/runtime/beam_search.h"
#include "engine/runtime/generation_rules.h"
#include "engine/runtime/model.h"

namespace arch {

struct Seq2SeqOptions {
  std::optional<int> beams;                   // none: num_beams (1 where the config has none)
  std::optional<double> length_penalty;       // none: the config's (1)
  std::optional<int> no_repeat_ngram_size;    // none: the config's (0)
  std::optional<int32_t> forced_bos_token_id; // the target language's token (none: the config's)
  int max_new_tokens = 0;                     // 0: the config's max_length less the start, else 256
};

// What a run would use: the config's settings with `o`'s over them.
struct Seq2SeqPlan {
  int beams = 1;
  double length_penalty = 1.0;
  bool early_stopping = false;
  int max_new_tokens = 256;
  int32_t start = 0;
  GenerationRules rules;
};
Result<Seq2SeqPlan> seq2seq_plan(const Model& m, const Seq2SeqOptions& o);

struct Seq2SeqResult {
  std::vector<int32_t> tokens;  // after the start token; the end token included where reached
  double score = 0;             // beam search's: sum log-prob / tokens ** length_penalty
  std::string stop_reason;      // "eos" or "length"
  double encode_seconds = 0, decode_seconds = 0;
};

// The plan's rules over a generated sequence (its start token put first),
// and the beam search it asks for (transformers' flavour, the rules on the
// log-probabilities). Both keep a reference to `p`.
LogitsProcessor plan_rules(const Seq2SeqPlan& p);
BeamOptions plan_beams(const Seq2SeqPlan& p);

// The encoder's input_ids as a tensor; an error where there are none or
// more than its positions.
Result<Tensor> encoder_input(const Model& m, const std::vector<int32_t>& input_ids);

// input_ids: the encoder's input, special tokens included.
Result<Seq2SeqResult> seq2seq_generate(const Model& m, const std::vector<int32_t>& input_ids, const Seq2SeqPlan& plan);

}  // namespace arch

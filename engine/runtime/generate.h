// Generation: a prompt chunk at the session's position, then one decode
// step per new token, each token chosen by the sampler from the last row of
// logits. The session keeps its KV cache afterwards, so a chat's next turn
// prefills only what it adds.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

struct GenerateOptions {
  int max_new_tokens = 16;
  SamplingOptions sampling;
  std::vector<int32_t> stop_ids;                    // stop after drawing one of these
  std::function<void(int32_t)> on_token;           // streaming: called per new token
  // A logits processor (transformers' term): called on each step's last
  // row of logits, before sampling, with the tokens made so far (Whisper's
  // suppressed tokens and timestamp rules). May set entries to -inf.
  std::function<void(std::span<float> logits, const std::vector<int32_t>& so_far)> process_logits;
  CheckStats* check = nullptr;                      // --check: compare fast steps with the reference
  std::function<void()> after_prompt;               // once the prompt ran (a chat marks its session there)
};

struct GenerateResult {
  std::vector<int32_t> tokens;   // the new tokens only
  std::vector<float> logprobs;   // each one's log-probability under the processed logits
  std::string stop_reason;       // "length" or "eos"
  double encode_seconds = 0;     // an encoder-decoder's encoder
  double prompt_seconds = 0;
  double decode_seconds = 0;
};

// `prompt` runs at the session's position (a whole prompt, or what a chat
// turn adds); the session must have room for it and max_new_tokens more.
Result<GenerateResult> generate(Session& s, const std::vector<int32_t>& prompt, const GenerateOptions& opt);
// The same in a session of its own, sized to the prompt and max_new_tokens.
// An encoder-decoder (T5) takes the prompt as the encoder's input_ids and
// decodes from its decoder_start_token_id.
Result<GenerateResult> generate(const Model& m, const std::vector<int32_t>& prompt, const GenerateOptions& opt);

// An encoder-decoder's generation: the encoder on `encoder_inputs` (by its
// input names: input_ids, input_features), then `decoder_prompt` and one
// step per new token on the decoder, which holds the encoder's output.
Result<GenerateResult> generate_encoded(Session& s, NamedTensors encoder_inputs,
                                        const std::vector<int32_t>& decoder_prompt, const GenerateOptions& opt);

// A step's row of logits that holds NaN or Inf (from NaN or Inf weights, or
// an overflow): the error every decoding loop stops with, instead of a
// token drawn from noise.
Status check_logits_finite(std::span<const float> row, int64_t step);

// The token an encoder-decoder's decoder starts from: generation_config.json's
// decoder_start_token_id, else config.json's (none: an error naming both).
Result<int32_t> decoder_start_token(const Model& m);

// The checkpoint's generation_config.json (an empty object where it has
// none; an error where it is not a JSON object).
Result<nlohmann::json> generation_config(const Model& m);

// What ends generation: the config's eos_token_id (an int or a list), those
// generation_config.json names, and the tokenizer's EOS where there is one.
std::vector<int32_t> eos_ids(const Model& m, const Tokenizer* tok = nullptr);

}  // namespace arch

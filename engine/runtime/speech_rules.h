// Whisper's decoding rules as a checkpoint's generation_config.json gives
// them: the special tokens a transcript's prompt is made of, the tokens
// suppressed, and the timestamp rules applied to each step's logits
// (transformers' SuppressTokens, SuppressTokensAtBegin and
// WhisperTimeStampLogitsProcessor).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/model.h"

namespace arch {

struct SpeechTokens {
  int32_t start = -1;                         // decoder_start_token_id: <|startoftranscript|>
  int32_t eot = -1;                           // eos_token_id: <|endoftext|>
  std::map<std::string, int32_t> languages;   // "en" -> <|en|> (lang_to_id)
  std::map<std::string, int32_t> tasks;       // "transcribe", "translate" (task_to_id)
  std::optional<int32_t> no_timestamps;       // <|notimestamps|>; timestamps follow it, 0.02 s apart
  std::vector<int32_t> suppress, begin_suppress;
  int max_initial_timestamp_index = 50;       // the first timestamp at most 1.0 s in
  bool multilingual = false;
  std::optional<int32_t> timestamp_begin() const {
    return no_timestamps ? std::optional<int32_t>(*no_timestamps + 1) : std::nullopt;
  }
};

// From generation_config.json, config.json filling what it lacks; an error
// names what is missing (a start or end token).
Result<SpeechTokens> read_speech_tokens(const Model& m);

// One step's logits processed: suppress_tokens always, begin_suppress_tokens
// when nothing is decoded yet (`seq`: the tokens after the prompt), and with
// `timestamps` the timestamp rules: in pairs, rising, the first no later than
// max_initial_timestamp_index, none past the window (`window_steps` of
// 0.02 s), and a timestamp forced where together they outweigh every text
// token.
void apply_speech_rules(std::span<float> logits, const std::vector<int32_t>& seq, const SpeechTokens& st,
                        bool timestamps, int64_t window_steps);

}  // namespace arch

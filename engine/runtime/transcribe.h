// Speech to text with an encoder-decoder over log-mel windows (Whisper's
// decoding, as its generation_config.json describes it): the audio in
// consecutive windows of the length the encoder takes; per window the
// prompt <|startoftranscript|> [<|lang|> <|task|>] [<|notimestamps|>];
// suppress_tokens always, begin_suppress_tokens at the first step; with
// timestamps, the timestamp rules (pairs, rising, an initial one no later
// than max_initial_timestamp_index, timestamps forced where their total
// probability beats every text token); greedy or beam search, and the
// temperature fallback (a window whose average log-probability is below
// logprob_threshold or whose text compresses more than
// compression_ratio_threshold is decoded again, sampling at the next
// temperature).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/speech_rules.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

struct TranscribeOptions {
  std::string language;            // "en", ... (empty: detected where the model is multilingual)
  std::string task = "transcribe"; // or "translate"
  bool timestamps = false;
  int beam_size = 1;               // 1: greedy
  std::vector<float> temperatures = {0.0f, 0.2f, 0.4f, 0.6f, 0.8f, 1.0f};
  float logprob_threshold = -1.0f;
  float compression_ratio_threshold = 2.4f;
  // A window whose <|nospeech|> (or <|nocaptions|>) probability after
  // <|startoftranscript|> is above this, and whose decoding is unsure
  // (average log-probability below logprob_threshold), is silence: no
  // segment. Needs the token in the tokenizer.
  float no_speech_threshold = 0.6f;
  uint64_t seed = 0;
  int max_new_tokens = 0;          // per window (0: as many as the decoder's positions allow, at most 224)
  // Progress: called after each window with (windows done, windows in all).
  std::function<void(int, int)> on_window;
};

struct Segment {
  double start = 0, end = 0;       // seconds from the start of the audio
  std::vector<int32_t> tokens;     // text tokens (and timestamps, with timestamps on)
  std::string text;                // through the tokenizer, special tokens left out
  float avg_logprob = 0, compression_ratio = 0, temperature = 0;
  float no_speech_prob = 0;        // 0 where the tokenizer has no such token
};

struct Transcript {
  std::string language;            // as given or detected ("" when the model has none)
  std::vector<int32_t> prompt;     // the decoder's prompt of every window
  std::vector<Segment> segments;
  std::string text;                // every segment's, joined
  int windows = 0;
  int silent_windows = 0;          // judged silence, left out
  double encode_seconds = 0, decode_seconds = 0;
};

// `samples` at 16 kHz mono. `tok` may be null (the text is then empty and
// only the token ids say what was heard).
Result<Transcript> transcribe(const Model& m, const Tokenizer* tok, std::span<const float> samples,
                              const TranscribeOptions& opt);

// zlib's compression ratio of `text` (bytes in / bytes out), as Whisper's
// fallback measures repetition.
double compression_ratio(const std::string& text);

}  // namespace arch

// Text-to-speech over a template whose graph outputs a `waveform` (TTSStyle:
// families/vits.arch): ids in, the waveform and its durations out. The
// graph takes the per-call knobs as inputs of its own (speaker_id,
// speaking_rate, noise_scale, noise_scale_duration, seed); those left unset
// take the template's defaults (the checkpoint's config).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/interpreter.h"
#include "engine/runtime/model.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

struct SpeakOptions {
  float speaking_rate = NAN;         // NaN: the config's
  float noise_scale = NAN;
  float noise_scale_duration = NAN;
  int64_t seed = 0;                  // the noise draws (runtime: normal_noise)
  int speaker = -1;                  // -1: the first (0)
  OpProfile* profile = nullptr;      // time per op, where set (archrun bench --profile)
};

struct Speech {
  std::vector<float> waveform;       // mono, in [-1, 1]
  int sample_rate = 0;               // the config's sampling_rate
  std::vector<int64_t> durations;    // frames per input id
  int64_t frames = 0;                // spectrogram frames (their sum, at least 1)
  double compute_seconds = 0;        // the graph's run
  int pieces = 1;                    // runs of the graph it was spoken in (speak_text)
  double seconds() const { return sample_rate > 0 ? double(waveform.size()) / sample_rate : 0.0; }
  double real_time_factor() const { return seconds() > 0 ? compute_seconds / seconds() : 0.0; }
};

// The graph of `m` that outputs `waveform`, or null.
const ModelGraph* speech_graph(const Model& m);

// Errors name the fault: a model with no waveform graph, no ids, more ids
// than the limit 'speech_ids', an id outside the vocabulary, a rate
// outside 0.1 .. 10, a noise scale outside 0 .. 10 (Inf included; NaN
// means the config's), a speaker the voice does not have.
Result<Speech> speak(const Model& m, std::span<const int32_t> ids, const SpeakOptions& opt = {});

// A long text cut into pieces to speak one after another (as Piper speaks
// sentence by sentence), so its memory is that of its longest piece, not
// of the whole: text of at most `max_chars` bytes stays whole (one piece,
// exactly what transformers would speak); longer, it is cut after the
// sentence ends (. ! ? ; : and newlines, then whitespace) into pieces of at
// most `max_chars`, a sentence longer than that at its last space within.
std::vector<std::string> speech_pieces(std::string_view text, size_t max_chars = 400);

// Text through the voice's tokenizer: a long text in pieces
// (speech_pieces), spoken one after another, piece k with seed + k (each
// its own draws); pieces with no character in the vocabulary left out, and
// an error naming the tokenizer's file where that leaves nothing.
// `on_piece(k, n)`: called before piece k of n.
Result<Speech> speak_text(const Model& m, const Tokenizer& tok, std::string_view text, SpeakOptions opt = {},
                          const std::function<void(size_t, size_t)>& on_piece = nullptr);

// `more` appended to `all`: the waveforms and durations joined, the
// compute times summed.
void append_speech(Speech& all, const Speech& more);

}  // namespace arch

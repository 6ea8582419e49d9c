#include "engine/runtime/transcribe.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "importer/audio/log_mel.h"
#include "importer/checkpoint/canonical.h"
#include "engine/runtime/beam_search.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/session.h"

namespace arch {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// The log-mel window the encoder takes: its input_features [bins, frames].
struct Window {
  LogMelOptions mel;
  int64_t frames = 0;
};

Result<Window> encoder_window(const Model& m) {
  for (const auto& g : m.graphs) {
    int v = g->graph.find_input("input_features");
    if (v < 0) continue;
    const Shape& s = g->graph.values[size_t(v)].type.shape;
    if (s.size() != 2 || !s[0].concrete() || !s[1].concrete())
      return error(m.template_path + ": graph " + g->name() + "'s input_features must be [mel bins, frames], concrete");
    Window w;
    w.mel.bins = int(s[0].n);
    w.frames = s[1].n;
    w.mel.hop = int(m.config_int("hop_length", 160));
    auto pre = read_side_file(m.checkpoint.dir, "preprocessor_config.json");
    if (pre.ok() && pre->has_value()) {
      auto p = nlohmann::json::parse(**pre, nullptr, false);
      if (p.is_object()) {
        if (p.contains("hop_length") && p["hop_length"].is_number_integer()) w.mel.hop = p["hop_length"].get<int>();
        if (p.contains("n_fft") && p["n_fft"].is_number_integer()) w.mel.n_fft = p["n_fft"].get<int>();
        if (p.contains("feature_size") && p["feature_size"].is_number_integer() && p["feature_size"].get<int>() != w.mel.bins)
          return error(m.checkpoint.dir + "/preprocessor_config.json: feature_size " +
                       std::to_string(p["feature_size"].get<int>()) + " disagrees with the encoder's " +
                       std::to_string(w.mel.bins) + " mel bins");
      }
    }
    w.mel.window_samples = w.frames * w.mel.hop;
    return w;
  }
  return error(m.checkpoint.dir + ": the model has no graph taking input_features (a speech encoder)");
}

// One decoding of a window: the tokens after the prompt (the end token
// left out) and their log-probabilities.
struct Attempt {
  std::vector<int32_t> tokens;
  double sum_logprob = 0;
  int scored = 0;  // tokens scored, the end token included
  float temperature = 0;
  double avg_logprob() const { return scored ? sum_logprob / scored : 0.0; }
};

struct Decoder {
  const SpeechTokens& st;
  const TranscribeOptions& opt;
  std::vector<int32_t> prompt;
  int max_new = 0;
  int64_t window_steps = 1500;  // timestamps a window has: its seconds / 0.02
  NamedTensors state;  // the encoder's output for this window

  void process(std::span<float> logits, const std::vector<int32_t>& seq) const {
    apply_speech_rules(logits, seq, st, opt.timestamps, window_steps);
  }

  Result<Attempt> sample(Session& s, float temperature, uint64_t seed) const {
    s.begin(state);
    GenerateOptions g;
    g.max_new_tokens = max_new;
    g.stop_ids = {st.eot};
    g.sampling.greedy = temperature == 0.0f;
    g.sampling.temperature = temperature > 0 ? temperature : 1.0f;
    g.sampling.seed = seed;
    g.process_logits = [this](std::span<float> l, const std::vector<int32_t>& seq) { process(l, seq); };
    ARCH_TRY(GenerateResult r, generate(s, prompt, g));
    Attempt a;
    a.temperature = temperature;
    for (size_t k = 0; k < r.tokens.size(); ++k) {
      a.sum_logprob += r.logprobs[k];
      ++a.scored;
      if (r.tokens[k] != st.eot) a.tokens.push_back(r.tokens[k]);
    }
    return a;
  }

  Result<Attempt> beam(std::vector<std::unique_ptr<Session>>& sessions, int width) const {
    auto process_fn = [this](std::span<float> l, const std::vector<int32_t>& seq) { process(l, seq); };
    ARCH_TRY(BeamResult b, beam_search(sessions, state, prompt, width, max_new, st.eot, process_fn));
    Attempt a;
    a.sum_logprob = b.sum_logprob;
    a.scored = int(b.tokens.size());
    for (int32_t t : b.tokens)
      if (t != st.eot) a.tokens.push_back(t);
    return a;
  }
};

}  // namespace

double compression_ratio(const std::string& text) {
  if (text.empty()) return 0.0;
  uLongf out_len = compressBound(uLong(text.size()));
  std::vector<Bytef> out(out_len);
  if (compress2(out.data(), &out_len, reinterpret_cast<const Bytef*>(text.data()), uLong(text.size()), 9) != Z_OK)
    return 0.0;
  return double(text.size()) / double(out_len);
}

Result<Transcript> transcribe(const Model& m, const Tokenizer* tok, std::span<const float> samples,
                              const TranscribeOptions& opt) {
  if (!m.is_encoder_decoder()) return error(m.checkpoint.dir + ": not an encoder-decoder; transcription needs one");
  if (samples.empty()) return error("the audio holds no samples");
  ARCH_TRY(Window w, encoder_window(m));
  ARCH_TRY(SpeechTokens st, read_speech_tokens(m));
  if (opt.beam_size < 1) return error("--beam-size must be at least 1");
  if (opt.temperatures.empty()) return error("transcription needs at least one temperature (0: greedy)");
  if (opt.timestamps && !st.no_timestamps)
    return error(m.checkpoint.dir + "/generation_config.json names no no_timestamps_token_id: this checkpoint "
                                    "gives no timestamps");
  if (opt.task != "transcribe" && opt.task != "translate")
    return error("--task must be transcribe or translate, not '" + opt.task + "'");
  Transcript out;

  // The prompt: <|startoftranscript|> [<|lang|> <|task|>] [<|notimestamps|>].
  std::vector<int32_t> prompt = {st.start};
  const int64_t max_positions = m.config_int("max_target_positions", 448);
  Decoder dec{st, opt, {}, 0, 1500, {}};
  dec.window_steps = int64_t(std::llround(double(w.mel.window_samples) / w.mel.sample_rate / 0.02));
  std::vector<std::unique_ptr<Session>> sessions;
  std::optional<int32_t> no_speech;
  if (tok)
    for (const char* name : {"<|nospeech|>", "<|nocaptions|>"})
      if (!no_speech) no_speech = tok->token_to_id(name);
  const int64_t window = w.mel.window_samples;
  const int windows = int((int64_t(samples.size()) + window - 1) / window);
  for (int win = 0; win < windows; ++win) {
    const double t0 = double(win) * double(window) / w.mel.sample_rate;
    const double t_end = std::min<double>(double(win + 1) * double(window), double(samples.size())) / w.mel.sample_rate;
    auto te = clock_type::now();
    ARCH_TRY(LogMel mel, whisper_log_mel(samples, w.mel, int64_t(win) * window));
    if (sessions.empty())
      for (int b = 0; b < opt.beam_size; ++b) sessions.push_back(std::make_unique<Session>(m, max_positions));
    ARCH_TRY(dec.state, sessions[0]->encode({{"input_features", mel.features}}));
    out.encode_seconds += seconds_since(te);

    // What follows <|startoftranscript|>: the language (detected once) and
    // how likely the window is silence.
    std::vector<float> first;
    if ((win == 0 && st.multilingual && opt.language.empty()) || no_speech) {
      sessions[0]->begin(dec.state);
      ARCH_TRY(auto o, sessions[0]->step(std::vector<int32_t>{st.start}, {"logits"}, true));
      const Tensor& l = o.at("logits");
      first.assign(l.f32() + l.numel() - l.dim(-1), l.f32() + l.numel());
    }
    float no_speech_prob = 0;
    if (no_speech && *no_speech < int32_t(first.size())) {
      float top = -INFINITY;
      for (float x : first) top = std::max(top, x);
      double sum = 0;
      for (float x : first) sum += std::exp(double(x) - top);
      no_speech_prob = float(std::exp(double(first[size_t(*no_speech)]) - top) / sum);
    }
    if (win == 0) {  // the language, once: given, or the likeliest language token after <|startoftranscript|>
      if (st.multilingual) {
        std::string lang = opt.language;
        if (lang.empty()) {
          float best = -INFINITY;
          for (auto& [code, id] : st.languages)
            if (id < int32_t(first.size()) && first[size_t(id)] > best) best = first[size_t(id)], lang = code;
        }
        auto li = st.languages.find(lang);
        if (li == st.languages.end())
          return error("language '" + lang + "' is not one the checkpoint's generation_config.json lists (lang_to_id)");
        auto ti = st.tasks.find(opt.task);
        if (ti == st.tasks.end()) return error("task '" + opt.task + "' is not in the checkpoint's task_to_id");
        prompt.push_back(li->second);
        prompt.push_back(ti->second);
        out.language = lang;
      } else if (!opt.language.empty() && opt.language != "en") {
        return error("this checkpoint is English-only (no lang_to_id in generation_config.json): --language " + opt.language);
      }
      if (!opt.timestamps && st.no_timestamps) prompt.push_back(*st.no_timestamps);
      dec.prompt = prompt;
      out.prompt = prompt;
      const int64_t room = max_positions - int64_t(prompt.size());
      if (room < 1)
        return error("the decoder prompt (" + std::to_string(prompt.size()) + " tokens) leaves no room in the " +
                     std::to_string(max_positions) + " positions the decoder has (max_target_positions)");
      dec.max_new = int(std::min<int64_t>(opt.max_new_tokens > 0 ? opt.max_new_tokens : std::min<int64_t>(224, max_positions / 2), room));
    }

    // Greedy (or beam) first; where the result looks wrong, sample hotter.
    auto td = clock_type::now();
    Attempt best;
    for (size_t k = 0; k < opt.temperatures.size(); ++k) {
      const float temperature = opt.temperatures[k];
      Attempt a;
      if (temperature == 0.0f && opt.beam_size > 1) {
        ARCH_TRY(a, dec.beam(sessions, opt.beam_size));
      } else {
        ARCH_TRY(a, dec.sample(*sessions[0], temperature, opt.seed + uint64_t(win) * 977 + k));
      }
      a.temperature = temperature;
      std::vector<int32_t> text_tokens;
      for (int32_t t : a.tokens)
        if (!st.timestamp_begin() || t < *st.timestamp_begin()) text_tokens.push_back(t);
      const double cr = tok ? compression_ratio(tok->decode(text_tokens, true)) : 0.0;
      const bool fallback = cr > opt.compression_ratio_threshold || a.avg_logprob() < opt.logprob_threshold;
      if (k == 0 || !fallback || a.avg_logprob() > best.avg_logprob()) best = a;  // else the likeliest so far
      if (!fallback) break;
    }
    out.decode_seconds += seconds_since(td);
    if (no_speech && no_speech_prob > opt.no_speech_threshold && best.avg_logprob() < opt.logprob_threshold) {
      ++out.silent_windows;  // silence, as Whisper judges it: no segment
      ++out.windows;
      if (opt.on_window) opt.on_window(win + 1, windows);
      continue;
    }

    // Segments: with timestamps, between each pair; without, the window.
    auto add = [&](double start, double end, std::vector<int32_t> toks) {
      if (toks.empty()) return;
      Segment s;
      s.start = start, s.end = std::max(start, end), s.tokens = std::move(toks);
      if (tok) s.text = tok->decode(s.tokens, true);
      s.avg_logprob = float(best.avg_logprob());
      s.temperature = best.temperature;
      s.compression_ratio = float(compression_ratio(s.text));
      s.no_speech_prob = no_speech_prob;
      out.segments.push_back(std::move(s));
    };
    if (opt.timestamps) {
      const int32_t ts = *st.timestamp_begin();
      std::optional<double> start;
      std::vector<int32_t> cur;
      for (int32_t t : best.tokens) {
        if (t < ts) {
          cur.push_back(t);
          continue;
        }
        const double at = std::min(t_end, t0 + 0.02 * double(t - ts));
        if (start && !cur.empty()) {
          add(*start, at, std::move(cur));
          cur.clear();
          start.reset();
        } else {
          start = at;
        }
      }
      add(start.value_or(t0), t_end, std::move(cur));
    } else {
      add(t0, t_end, best.tokens);
    }
    ++out.windows;
    if (opt.on_window) opt.on_window(win + 1, windows);
  }
  for (const auto& s : out.segments) out.text += s.text;
  return out;
}

}  // namespace arch

#include "runtime/transcribe.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "audio/log_mel.h"
#include "importer/canonical.h"
#include "runtime/generate.h"
#include "runtime/sampler.h"
#include "runtime/session.h"

namespace arch {

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

Result<nlohmann::json> generation_config(const Model& m) {
  auto text = read_side_file(m.checkpoint.dir, "generation_config.json");
  if (!text.ok()) return text.error();
  if (!text->has_value()) return nlohmann::json::object();
  auto g = nlohmann::json::parse(**text, nullptr, false);
  if (!g.is_object()) return error(m.checkpoint.dir + "/generation_config.json: not a JSON object");
  return g;
}

std::vector<int32_t> int_list(const nlohmann::json& j) {
  std::vector<int32_t> out;
  if (j.is_array())
    for (auto& x : j)
      if (x.is_number_integer()) out.push_back(x.get<int32_t>());
  return out;
}

// "<|en|>" -> "en"
std::string bare(const std::string& token) {
  if (token.size() > 4 && token.starts_with("<|") && token.ends_with("|>")) return token.substr(2, token.size() - 4);
  return token;
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

// The timestamp rules of Whisper's decoding (transformers'
// WhisperTimeStampLogitsProcessor), on one step's logits.
// Timestamps past the window's end (`steps` of 0.02 s) never apply.
void apply_timestamp_rules(std::span<float> logits, const std::vector<int32_t>& seq, const SpeechTokens& st,
                           int64_t steps) {
  const int32_t ts = *st.timestamp_begin();
  const int64_t V = int64_t(logits.size());
  auto suppress = [&](int64_t from, int64_t to) {
    for (int64_t i = std::max<int64_t>(from, 0); i < std::min(to, V); ++i) logits[size_t(i)] = -INFINITY;
  };
  suppress(*st.no_timestamps, *st.no_timestamps + 1);
  suppress(int64_t(ts) + steps + 1, V);
  const bool last_ts = !seq.empty() && seq.back() >= ts;
  const bool penult_ts = seq.size() < 2 || seq[seq.size() - 2] >= ts;
  if (last_ts) {
    if (penult_ts) suppress(ts, V);  // a pair closed: text next
    else suppress(0, st.eot);        // a segment open: its closing timestamp (or the end)
  }
  int32_t last = -1;
  for (int32_t t : seq)
    if (t >= ts) last = t;
  if (last >= 0) suppress(ts, last_ts && !penult_ts ? last : last + 1);  // rising
  if (seq.empty()) {
    suppress(0, ts);  // the first token is a timestamp ...
    suppress(int64_t(ts) + st.max_initial_timestamp_index + 1, V);  // ... no later than this
  }
  // Where the timestamps together outweigh every text token, one of them.
  float top = -INFINITY;
  for (float x : logits) top = std::max(top, x);
  if (top == -INFINITY) return;
  double total = 0, ts_total = 0;
  float text_max = -INFINITY;
  for (int64_t i = 0; i < V; ++i) {
    const double p = std::exp(double(logits[size_t(i)]) - top);
    total += p;
    if (i >= ts) ts_total += p;
    else text_max = std::max(text_max, logits[size_t(i)]);
  }
  const double ts_logprob = std::log(ts_total) - std::log(total);
  const double text_logprob = double(text_max) - top - std::log(total);
  if (ts_total > 0 && ts_logprob > text_logprob) suppress(0, ts);
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
  const Model& m;
  const SpeechTokens& st;
  const TranscribeOptions& opt;
  std::vector<int32_t> prompt;
  int max_new = 0;
  int64_t window_steps = 1500;  // timestamps a window has: its seconds / 0.02
  NamedTensors state;  // the encoder's output for this window

  void process(std::span<float> logits, const std::vector<int32_t>& seq) const {
    for (int32_t t : st.suppress)
      if (t >= 0 && size_t(t) < logits.size()) logits[size_t(t)] = -INFINITY;
    if (seq.empty())
      for (int32_t t : st.begin_suppress)
        if (t >= 0 && size_t(t) < logits.size()) logits[size_t(t)] = -INFINITY;
    if (opt.timestamps) apply_timestamp_rules(logits, seq, st, window_steps);
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

  // Beam search at temperature 0: `width` hypotheses, each in a session of
  // its own; a hypothesis that takes over another's history rewinds its
  // session to what they share and replays the rest.
  Result<Attempt> beam(std::vector<std::unique_ptr<Session>>& sessions, int width) const {
    struct Hyp {
      std::vector<int32_t> seq;
      double score = 0;
      int session = -1;
      std::vector<float> logits;  // its next step's, processed
    };
    const int64_t base = int64_t(prompt.size());
    auto step_logits = [&](Session& s, std::span<const int32_t> ids, const std::vector<int32_t>& seq)
        -> Result<std::vector<float>> {
      ARCH_TRY(auto outs, s.step(ids, {"logits"}, /*last_only=*/true));
      const Tensor& l = outs.at("logits");
      const int64_t V = l.dim(-1), rows = l.numel() / V;
      std::vector<float> v(l.f32() + (rows - 1) * V, l.f32() + rows * V);
      process(v, seq);
      return v;
    };
    for (auto& s : sessions) s->reset();
    sessions[0]->begin(state);
    std::vector<Hyp> live(1);
    live[0].session = 0;
    ARCH_TRY(live[0].logits, step_logits(*sessions[0], prompt, {}));
    std::vector<std::pair<double, std::vector<int32_t>>> finished;
    std::vector<std::vector<int32_t>> held(sessions.size());  // what each session holds past the prompt
    for (int k = 0; k < max_new && !live.empty() && int(finished.size()) < width; ++k) {
      struct Cand { double score; size_t parent; int32_t tok; };
      std::vector<Cand> cands;
      for (size_t h = 0; h < live.size(); ++h) {
        const auto& l = live[h].logits;
        float top = -INFINITY;
        for (float x : l) top = std::max(top, x);
        double sum = 0;
        for (float x : l) sum += std::exp(double(x) - top);
        const double norm = top + std::log(sum);
        std::vector<int32_t> idx(l.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
        const size_t take = std::min(idx.size(), size_t(width) + 1);
        std::partial_sort(idx.begin(), idx.begin() + long(take), idx.end(),
                          [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)]; });
        for (size_t i = 0; i < take; ++i)
          if (l[size_t(idx[i])] > -INFINITY) cands.push_back({live[h].score + l[size_t(idx[i])] - norm, h, idx[i]});
      }
      std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) { return a.score > b.score; });
      std::vector<Hyp> next;
      for (const Cand& c : cands) {
        if (int(next.size()) == width) break;
        std::vector<int32_t> seq = live[c.parent].seq;
        seq.push_back(c.tok);
        if (c.tok == st.eot) {
          if (int(finished.size()) < width) finished.push_back({c.score / double(seq.size()), seq});
          continue;
        }
        Hyp h;
        h.seq = std::move(seq);
        h.score = c.score;
        h.session = int(c.parent);  // resolved below
        next.push_back(std::move(h));
      }
      // Sessions: a parent's own session goes to its first child; the
      // others take a session no child claimed and bring it to the
      // parent's history (rewound to what it shares, the rest replayed).
      std::vector<bool> claimed(sessions.size(), false);
      std::vector<bool> parent_used(live.size(), false);
      std::vector<size_t> parent_of(next.size());
      for (size_t j = 0; j < next.size(); ++j) {
        parent_of[j] = size_t(next[j].session);
        if (!parent_used[parent_of[j]]) {
          parent_used[parent_of[j]] = true;
          next[j].session = live[parent_of[j]].session;
          claimed[size_t(next[j].session)] = true;
        } else {
          next[j].session = -1;
        }
      }
      for (size_t j = 0; j < next.size(); ++j) {
        if (next[j].session >= 0) continue;
        size_t free = 0;
        while (claimed[free]) ++free;
        claimed[free] = true;
        next[j].session = int(free);
        const auto& want = live[parent_of[j]].seq;
        const auto& have = held[free];
        Session& fs = *sessions[free];
        size_t common = 0;
        if (fs.position() >= base)
          while (common < want.size() && common < have.size() && want[common] == have[common]) ++common;
        Result<NamedTensors> replay = NamedTensors{};
        if (fs.position() < base) {  // never used: the prompt and the whole history
          fs.begin(state);
          std::vector<int32_t> all = prompt;
          all.insert(all.end(), want.begin(), want.end());
          replay = fs.step(all, {"logits"}, true);
        } else {
          ARCH_TRY_STATUS(fs.rewind(base + int64_t(common)));
          if (common < want.size()) replay = fs.step(std::span(want).subspan(common), {"logits"}, true);
        }
        if (!replay.ok()) return replay.error();
        held[free] = want;
      }
      for (auto& h : next) {
        const int32_t tok = h.seq.back();
        held[size_t(h.session)] = h.seq;
        ARCH_TRY(h.logits, step_logits(*sessions[size_t(h.session)], std::span(&tok, 1), h.seq));
      }
      live = std::move(next);
    }
    for (auto& h : live)
      if (int(finished.size()) < width) finished.push_back({h.score / double(std::max<size_t>(1, h.seq.size())), h.seq});
    if (finished.empty()) return error("beam search ended with no hypothesis");
    auto best = std::max_element(finished.begin(), finished.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; });
    Attempt a;
    a.scored = int(best->second.size());
    a.sum_logprob = best->first * a.scored;
    for (int32_t t : best->second)
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

Result<SpeechTokens> read_speech_tokens(const Model& m) {
  ARCH_TRY(nlohmann::json g, generation_config(m));
  SpeechTokens st;
  ARCH_TRY(st.start, decoder_start_token(m));
  const nlohmann::json& cfg = m.checkpoint.config;
  for (const nlohmann::json* j : {static_cast<const nlohmann::json*>(&g), &cfg}) {
    if (st.eot >= 0 || !j->contains("eos_token_id")) continue;
    const auto& e = (*j)["eos_token_id"];
    if (e.is_number_integer()) st.eot = e.get<int32_t>();
    else if (e.is_array() && !e.empty() && e[0].is_number_integer()) st.eot = e[0].get<int32_t>();
  }
  if (st.eot < 0) return error(m.checkpoint.dir + ": no eos_token_id (the end of a transcript) in generation_config.json or config.json");
  if (g.contains("lang_to_id") && g["lang_to_id"].is_object())
    for (auto& [k, v] : g["lang_to_id"].items())
      if (v.is_number_integer()) st.languages[bare(k)] = v.get<int32_t>();
  if (g.contains("task_to_id") && g["task_to_id"].is_object())
    for (auto& [k, v] : g["task_to_id"].items())
      if (v.is_number_integer()) st.tasks[k] = v.get<int32_t>();
  if (g.contains("no_timestamps_token_id") && g["no_timestamps_token_id"].is_number_integer())
    st.no_timestamps = g["no_timestamps_token_id"].get<int32_t>();
  for (const nlohmann::json* j : {static_cast<const nlohmann::json*>(&g), &cfg}) {
    if (st.suppress.empty() && j->contains("suppress_tokens")) st.suppress = int_list((*j)["suppress_tokens"]);
    if (st.begin_suppress.empty() && j->contains("begin_suppress_tokens"))
      st.begin_suppress = int_list((*j)["begin_suppress_tokens"]);
  }
  if (g.contains("max_initial_timestamp_index") && g["max_initial_timestamp_index"].is_number_integer())
    st.max_initial_timestamp_index = g["max_initial_timestamp_index"].get<int>();
  st.multilingual = g.value("is_multilingual", !st.languages.empty());
  return st;
}

Result<Transcript> transcribe(const Model& m, const Tokenizer* tok, std::span<const float> samples,
                              const TranscribeOptions& opt) {
  if (!m.is_encoder_decoder()) return error(m.checkpoint.dir + ": not an encoder-decoder; transcription needs one");
  if (samples.empty()) return error("the audio holds no samples");
  ARCH_TRY(Window w, encoder_window(m));
  ARCH_TRY(SpeechTokens st, read_speech_tokens(m));
  if (opt.beam_size < 1) return error("--beam-size must be at least 1");
  if (opt.timestamps && !st.no_timestamps)
    return error(m.checkpoint.dir + "/generation_config.json names no no_timestamps_token_id: this checkpoint "
                                    "gives no timestamps");
  if (opt.task != "transcribe" && opt.task != "translate")
    return error("--task must be transcribe or translate, not '" + opt.task + "'");
  Transcript out;

  // The prompt: <|startoftranscript|> [<|lang|> <|task|>] [<|notimestamps|>].
  std::vector<int32_t> prompt = {st.start};
  const int64_t max_positions = m.config_int("max_target_positions", 448);
  Decoder dec{m, st, opt, {}, 0, 1500, {}};
  dec.window_steps = int64_t(std::llround(double(w.mel.window_samples) / w.mel.sample_rate / 0.02));
  std::vector<std::unique_ptr<Session>> sessions;
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

    if (win == 0) {  // the language, once: given, or the likeliest language token after <|startoftranscript|>
      if (st.multilingual) {
        std::string lang = opt.language;
        if (lang.empty()) {
          sessions[0]->begin(dec.state);
          ARCH_TRY(auto first, sessions[0]->step(std::vector<int32_t>{st.start}, {"logits"}, true));
          const Tensor& l = first.at("logits");
          float best = -INFINITY;
          for (auto& [code, id] : st.languages)
            if (id < l.dim(-1) && l.f32()[l.numel() - l.dim(-1) + id] > best) best = l.f32()[l.numel() - l.dim(-1) + id], lang = code;
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
    bool have = false;
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
      if (!have || a.avg_logprob() > best.avg_logprob() || !fallback) best = a, have = true;
      if (!fallback) {
        best = a;
        break;
      }
    }
    out.decode_seconds += seconds_since(td);

    // Segments: with timestamps, between each pair; without, the window.
    auto add = [&](double start, double end, std::vector<int32_t> toks) {
      if (toks.empty()) return;
      Segment s;
      s.start = start, s.end = std::max(start, end), s.tokens = std::move(toks);
      if (tok) s.text = tok->decode(s.tokens, true);
      s.avg_logprob = float(best.avg_logprob());
      s.temperature = best.temperature;
      s.compression_ratio = float(compression_ratio(s.text));
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

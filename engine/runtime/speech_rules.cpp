#include "engine/runtime/speech_rules.h"

#include <algorithm>
#include <cmath>

#include "engine/runtime/generate.h"

namespace arch {

namespace {

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

}  // namespace

void apply_speech_rules(std::span<float> logits, const std::vector<int32_t>& seq, const SpeechTokens& st,
                        bool timestamps, int64_t window_steps) {
  for (int32_t t : st.suppress)
    if (t >= 0 && size_t(t) < logits.size()) logits[size_t(t)] = -INFINITY;
  if (seq.empty())
    for (int32_t t : st.begin_suppress)
      if (t >= 0 && size_t(t) < logits.size()) logits[size_t(t)] = -INFINITY;
  if (timestamps && st.no_timestamps) apply_timestamp_rules(logits, seq, st, window_steps);
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

}  // namespace arch

#include "engine/runtime/generation_rules.h"

#include <cmath>

namespace arch {

void GenerationRules::apply(std::span<float> scores, const std::vector<int32_t>& seq) const {
  const int64_t V = int64_t(scores.size());
  auto ban = [&](int32_t id) {
    if (id >= 0 && id < V) scores[size_t(id)] = -INFINITY;
  };
  const size_t len = seq.size();
  // No n-gram twice: the tokens that followed the current (n-1)-token tail before.
  const size_t n = size_t(std::max(no_repeat_ngram_size, 0));
  if (n > 0 && len + 1 >= n) {
    for (size_t i = 0; i + n <= len; ++i) {
      bool same = true;
      for (size_t j = 0; j + 1 < n && same; ++j) same = seq[i + j] == seq[len - (n - 1) + j];
      if (same) ban(seq[i + n - 1]);
    }
  }
  // Bad words: a single token always; a longer one when its prefix ends the sequence.
  for (const auto& w : bad_words_ids) {
    if (w.empty() || w.size() - 1 > len) continue;
    bool tail = true;
    for (size_t j = 0; j + 1 < w.size() && tail; ++j) tail = seq[len - (w.size() - 1) + j] == w[j];
    if (tail) ban(w.back());
  }
  if (int(len) < min_length)
    for (int32_t e : eos) ban(e);
  // Forced tokens: the first after the start, the end at the last position.
  auto force = [&](int32_t id) {
    if (id < 0 || id >= V) return;
    for (float& x : scores) x = -INFINITY;
    scores[size_t(id)] = 0.0f;
  };
  if (forced_bos_token_id && len == 1) force(*forced_bos_token_id);
  if (forced_eos_token_id && max_length > 0 && int(len) == max_length - 1) force(*forced_eos_token_id);
}

Result<GenerationRules> generation_rules(const nlohmann::json& gen, const nlohmann::json& config) {
  GenerationRules r;
  // generation_config.json wins; config.json where it is silent.
  auto field = [&](const char* name) -> const nlohmann::json* {
    if (gen.is_object() && gen.contains(name) && !gen[name].is_null()) return &gen[name];
    if (config.is_object() && config.contains(name) && !config[name].is_null()) return &config[name];
    return nullptr;
  };
  auto integer = [&](const char* name, int& out) -> Status {
    if (const auto* v = field(name)) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > (int64_t(1) << 30))
        return error(std::string("generation config: '") + name + "' must be a non-negative integer, got " + v->dump());
      out = v->get<int>();
    }
    return {};
  };
  auto token = [&](const char* name, std::optional<int32_t>& out) -> Status {
    if (const auto* v = field(name)) {
      if (!v->is_number_integer() || v->get<int64_t>() < 0) return error(std::string("generation config: '") + name + "' must be a token id, got " + v->dump());
      out = v->get<int32_t>();
    }
    return {};
  };
  ARCH_TRY_STATUS(integer("no_repeat_ngram_size", r.no_repeat_ngram_size));
  ARCH_TRY_STATUS(integer("min_length", r.min_length));
  ARCH_TRY_STATUS(integer("max_length", r.max_length));
  ARCH_TRY_STATUS(token("forced_bos_token_id", r.forced_bos_token_id));
  ARCH_TRY_STATUS(token("forced_eos_token_id", r.forced_eos_token_id));
  if (const auto* v = field("bad_words_ids")) {
    bool ok = v->is_array();
    for (const auto& w : ok ? *v : nlohmann::json::array()) {
      ok = ok && w.is_array() && !w.empty();
      std::vector<int32_t> ids;
      for (const auto& id : ok ? w : nlohmann::json::array()) {
        ok = ok && id.is_number_integer() && id.get<int64_t>() >= 0;
        if (ok) ids.push_back(id.get<int32_t>());
      }
      if (ok) r.bad_words_ids.push_back(std::move(ids));
    }
    if (!ok) return error("generation config: 'bad_words_ids' must be a list of non-empty lists of token ids, got " + v->dump());
  }
  return r;
}

}  // namespace arch

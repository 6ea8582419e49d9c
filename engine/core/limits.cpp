#include "engine/core/limits.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <mutex>

namespace arch {

namespace {

// Each default is far past any real checkpoint (the largest models have a
// few hundred layers, tokenizers a few hundred thousand merges) and far
// below what would exhaust a 24 GiB machine.
std::vector<LimitInfo> defaults() {
  return {
      {"template_bytes", 0, 16ll << 20, "bytes of one .arch template file"},
      {"template_depth", 0, 200, "nesting depth of brackets and expressions in a .arch template, and of its imports"},
      {"loop_iterations", 0, 65536, "iterations of a template's 'for' loops in one instantiation (layers, experts)"},
      {"graph_nodes", 0, 4000000, "nodes in one instantiated graph"},
      {"header_bytes", 0, 100000000, "bytes of a safetensors JSON header (safetensors' own bound), or of a GGUF file's metadata and tensor infos"},
      {"gguf_items", 0, 16000000, "metadata keys, tensors, or elements of one metadata array in a GGUF file"},
      {"json_depth", 0, 512, "nesting depth of a JSON file (config.json, tokenizer.json, a request)"},
      {"chat_text_bytes", 0, 64ll << 20, "bytes of any string a chat template makes, its output included"},
      {"chat_iterations", 0, 1000000, "loop iterations of one chat-template render"},
      {"chat_depth", 0, 256, "nesting depth of a chat template (blocks, expressions, macro calls)"},
      {"chat_memory_bytes", 0, 1ll << 30, "bytes a chat-template render's strings and lists hold at once"},
      {"tokenizer_entries", 0, 16000000, "vocabulary entries or merges of a tokenizer"},
      {"image_pixels", 0, 2 * 89478485, "pixels of an image to decode (PIL's decompression-bomb bound)"},
      {"audio_samples", 0, 1ll << 28, "samples of a sound file per channel (4.6 hours at 16 kHz)"},
      {"prompt_bytes", 0, 0,
       "bytes of one completion or chat request's prompt text, refused before it is tokenized (default 0: 64 per "
       "position of the server's context)"},
      {"latent_elements", 0, 1ll << 28,
       "elements of the latents a diffusion loop keeps: every step's latents and noise prediction (1 GiB as f32)"},
      {"speech_ids", 0, 4096,
       "ids one run of a voice takes (--ids, or a piece of a long text: at most 801 for its 400 bytes)"},
  };
}

struct Table {
  std::mutex mu;
  std::vector<LimitInfo> limits;
  bool env_read = false;
};

Table& table() {
  static Table t;
  return t;
}

LimitInfo* find(std::vector<LimitInfo>& ls, std::string_view name) {
  for (auto& l : ls)
    if (l.name == name) return &l;
  return nullptr;
}

std::string known_names(const std::vector<LimitInfo>& ls) {
  std::string s;
  for (const auto& l : ls) s += (s.empty() ? "" : ", ") + l.name;
  return s;
}

Status set_locked(std::vector<LimitInfo>& ls, std::string_view name, int64_t value) {
  LimitInfo* l = find(ls, name);
  if (!l) return error("unknown limit '" + std::string(name) + "' (limits: " + known_names(ls) + ")");
  if (value < 1) return error("limit '" + std::string(name) + "' must be at least 1, got " + std::to_string(value));
  l->value = value;
  return {};
}

Result<int64_t> parse_value(std::string_view name, std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v) || v != std::floor(v) || v < 1 || v > 9.2e18)
    return error("limit '" + std::string(name) + "': '" + s + "' is not a whole number >= 1");
  return int64_t(v);
}

Status set_spec_locked(std::vector<LimitInfo>& ls, std::string_view spec) {
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return error("limit '" + std::string(item) + "': write NAME=VALUE (limits: " + known_names(ls) + ")");
    ARCH_TRY(int64_t v, parse_value(item.substr(0, eq), item.substr(eq + 1)));
    ARCH_TRY_STATUS(set_locked(ls, item.substr(0, eq), v));
  }
  return {};
}

// The table, with ARCHETYPE_LIMITS applied once. A bad variable cannot be
// reported from here (limit() has no error path), so it is reported by
// the tools at their start (limits_environment) and the defaults stay.
std::vector<LimitInfo>& ready(Table& t) {
  if (t.limits.empty()) {
    t.limits = defaults();
    for (auto& l : t.limits) l.value = l.standard;
  }
  if (!t.env_read) {
    t.env_read = true;
    if (const char* env = std::getenv("ARCHETYPE_LIMITS")) {
      auto copy = t.limits;
      if (set_spec_locked(copy, env).ok()) t.limits = std::move(copy);
    }
  }
  return t.limits;
}

}  // namespace

int64_t limit(std::string_view name) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  auto& ls = ready(t);
  const LimitInfo* l = find(ls, name);
  return l ? l->value : 0;  // 0: an unlisted name refuses everything, so a typo shows at once in tests
}

Status set_limit(std::string_view name, int64_t value) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  return set_locked(ready(t), name, value);
}

Status set_limits(std::string_view spec) {
  Table& t = table();
  std::lock_guard lock(t.mu);
  auto& ls = ready(t);
  auto copy = ls;
  ARCH_TRY_STATUS(set_spec_locked(copy, spec));
  ls = std::move(copy);
  return {};
}

Status limits_environment() {
  const char* env = std::getenv("ARCHETYPE_LIMITS");
  if (!env) return {};
  auto ls = defaults();
  auto st = set_spec_locked(ls, env);
  if (!st.ok()) return error("ARCHETYPE_LIMITS: " + st.error().message);
  return {};
}

std::vector<LimitInfo> all_limits() {
  Table& t = table();
  std::lock_guard lock(t.mu);
  return ready(t);
}

Error over_limit(std::string_view name, const std::string& where, const std::string& what, int64_t asked) {
  const std::string n(name);
  const int64_t v = limit(name);
  return error((where.empty() ? "" : where + ": ") + what + " (" + std::to_string(asked) + ") exceeds the limit '" + n +
               "' (" + std::to_string(v) + "); if this is meant, raise it with --limit " + n + "=N or ARCHETYPE_LIMITS=" +
               n + "=N");
}

int64_t saturating_product(std::initializer_list<int64_t> sizes) {
  int64_t p = 1;
  for (int64_t s : sizes) {
    if (s <= 0) return 0;
    if (p > INT64_MAX / s) return INT64_MAX;
    p *= s;
  }
  return p;
}

Status check_limit(std::string_view name, int64_t asked, const std::string& where, const std::string& what) {
  if (asked <= limit(name)) return {};
  return over_limit(name, where, what, asked);
}

}  // namespace arch

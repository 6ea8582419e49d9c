#include "importer/checkpoint/gguf_names.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <toml++/toml.h>

#include "importer/checkpoint/gguf_rope_freqs.h"
#include "importer/checkpoint/gguf_tensor.h"

namespace arch {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// `name` against `pattern`, where "{i}" stands for a decimal number: the
// number matched ("" where the pattern has none), or nullopt.
std::optional<std::string> match(const std::string& pattern, const std::string& name) {
  const size_t at = pattern.find("{i}");
  if (at == std::string::npos) return pattern == name ? std::optional<std::string>("") : std::nullopt;
  const std::string head = pattern.substr(0, at), tail = pattern.substr(at + 3);
  if (name.size() <= head.size() + tail.size() || name.compare(0, head.size(), head) != 0 ||
      name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
    return std::nullopt;
  std::string number = name.substr(head.size(), name.size() - head.size() - tail.size());
  if (!std::all_of(number.begin(), number.end(), [](unsigned char c) { return std::isdigit(c); })) return std::nullopt;
  return number;
}

std::string fill(std::string pattern, const std::string& token, const std::string& value) {
  for (size_t at; (at = pattern.find(token)) != std::string::npos;) pattern.replace(at, token.size(), value);
  return pattern;
}

Result<std::vector<std::pair<std::string, std::string>>> string_table(const toml::table& t, const char* section,
                                                                     const std::string& path) {
  std::vector<std::pair<std::string, std::string>> out;
  const toml::table* s = t[section].as_table();
  if (!s) return out;
  for (const auto& [key, value] : *s) {
    if (value.is_table()) continue;  // a sub-table such as [config.none]
    auto v = value.value<std::string>();
    if (!v) return error(path + ": [" + section + "] " + std::string(key.str()) + " is not a string");
    out.emplace_back(std::string(key.str()), *v);
  }
  return out;
}

json toml_to_json(const toml::node& n) {
  if (auto s = n.value<std::string>()) return *s;
  if (n.is_integer()) return *n.value<int64_t>();
  if (n.is_floating_point()) return *n.value<double>();
  if (n.is_boolean()) return *n.value<bool>();
  return nullptr;
}

// Sets config["a"]["b"] for the field "a.b".
void set_field(json& config, const std::string& field, json value) {
  json* at = &config;
  size_t begin = 0;
  for (size_t dot; (dot = field.find('.', begin)) != std::string::npos; begin = dot + 1) {
    at = &(*at)[field.substr(begin, dot - begin)];
    if (!at->is_object()) *at = json::object();
  }
  (*at)[field.substr(begin)] = std::move(value);
}

// A `values` table's entry for the file's values of f's keys: exactly, or
// with present values read as "*" (fewest first).
std::optional<json> lookup(const GgufConfigField& f, const GgufFile& file, const std::string& arch) {
  std::vector<std::string> got;
  for (const std::string& key : f.keys) {
    const GgufValue* v = file.find(fill(key, "{arch}", arch));
    got.push_back(!v ? "" : v->value.is_string() ? v->value.get<std::string>() : v->value.dump());
  }
  const size_t n = got.size();
  std::vector<unsigned> masks;
  for (unsigned m = 0; m < (1u << n); ++m) masks.push_back(m);
  std::stable_sort(masks.begin(), masks.end(), [](unsigned a, unsigned b) { return __builtin_popcount(a) < __builtin_popcount(b); });
  for (unsigned m : masks) {
    std::string joined;
    bool usable = true;
    for (size_t i = 0; i < n; ++i) {
      const bool wild = m >> i & 1;
      if (wild && got[i].empty()) usable = false;
      joined += (i ? "," : "") + (wild ? std::string("*") : got[i]);
    }
    if (!usable) continue;
    if (auto it = f.values.find(joined); it != f.values.end()) return it->second;
  }
  return std::nullopt;
}

// config["a"]["b"] for "a.b", or null where it is not there.
const json* field_at(const json& config, const std::string& field) {
  const json* at = &config;
  size_t begin = 0;
  for (size_t dot;; begin = dot + 1) {
    dot = field.find('.', begin);
    auto it = at->find(field.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin));
    if (it == at->end()) return nullptr;
    at = &*it;
    if (dot == std::string::npos) return at;
    if (!at->is_object()) return nullptr;
  }
}

// Sets "a.b" where it is unset, and (for a nested field) where its object
// is there: a default of rope_scaling's applies only to a file that scales.
void set_if_unset(json& config, const std::string& field, const json& value) {
  if (field_at(config, field)) return;
  const size_t dot = field.rfind('.');
  if (dot != std::string::npos) {
    const json* parent = field_at(config, field.substr(0, dot));
    if (!parent || !parent->is_object()) return;
  }
  set_field(config, field, value);
}

}  // namespace

std::optional<std::string> GgufNameMap::hf_name(const std::string& gguf_name) const {
  for (const auto& [from, to] : tensors)
    if (auto i = match(from, gguf_name)) return fill(to, "{i}", *i);
  return std::nullopt;
}

std::optional<std::string> GgufNameMap::interleaved_heads(const std::string& gguf_name) const {
  for (const auto& [pattern, field] : rows_interleaved)
    if (match(pattern, gguf_name)) return field;
  return std::nullopt;
}

bool GgufNameMap::read_into_config(const std::string& gguf_name) const {
  if (gguf_name == rope_freqs) return true;
  for (const auto& [field, tensor] : config_tensors)
    if (tensor == gguf_name) return true;
  return false;
}

std::optional<GgufNameMap::PartOf> GgufNameMap::joined_part(const std::string& gguf_name) const {
  for (size_t e = 0; e < joined.size(); ++e)
    for (size_t p = 0; p < joined[e].parts.size(); ++p)
      if (auto block = match(joined[e].parts[p].name, gguf_name); block && !block->empty()) return PartOf{e, p, *block};
  return std::nullopt;
}

std::string fill_block(const std::string& pattern, const std::string& block) { return fill(pattern, "{i}", block); }
std::string fill_expert(const std::string& pattern, int64_t expert) {
  return fill(pattern, "{e}", std::to_string(expert));
}

double GgufNameMap::shift(const std::string& gguf_name) const {
  for (const auto& [pattern, by] : shifted)
    if (match(pattern, gguf_name)) return by;
  return 0;
}

bool GgufNameMap::is_transposed(const std::string& gguf_name) const {
  for (const std::string& pattern : transposed)
    if (match(pattern, gguf_name)) return true;
  return false;
}

std::string default_gguf_maps_dir() {
  if (const char* env = std::getenv("ARCHETYPE_FAMILIES"); env && *env) return (fs::path(env) / "gguf").string();
  return (fs::path(ARCHETYPE_FAMILIES_DIR) / "gguf").string();
}

Result<GgufNameMap> load_gguf_name_map(const std::string& dir, const std::string& architecture) {
  const bool plain = !architecture.empty() && std::all_of(architecture.begin(), architecture.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
  const fs::path path = fs::path(dir) / (architecture + ".toml");
  std::error_code ec;
  if (!plain || !fs::is_regular_file(path, ec)) {
    std::vector<std::string> known;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".toml") known.push_back(it->path().stem().string());
    std::sort(known.begin(), known.end());
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    return error("GGUF architecture '" + architecture + "' has no name map in " + dir + " (maps exist for: " +
                 (list.empty() ? "none" : list) + ")");
  }
  GgufNameMap map;
  map.path = path.string();
  toml::table t;
  try {
    t = toml::parse_file(map.path);
  } catch (const toml::parse_error& e) {
    return error(map.path + ":" + std::to_string(e.source().begin.line) + ": " + std::string(e.description()));
  }
  map.architecture = t["architecture"].value_or(std::string());
  map.model_type = t["model_type"].value_or(std::string());
  if (map.architecture != architecture || map.model_type.empty())
    return error(map.path + ": expected architecture = \"" + architecture + "\" and a model_type");
  auto strings = [](auto n) {  // a node_view, of a mutable or a const table
    std::vector<std::string> out;
    if (const toml::array* a = n.as_array())
      for (const auto& e : *a)
        if (auto s = e.value<std::string>()) out.push_back(*s);
    return out;
  };
  map.architectures = strings(t["architectures"]);
  map.rope_freqs = t["rope_freqs"].value_or(std::string());
  ARCH_TRY(map.config_tensors, string_table(t, "config_tensors", map.path));
  if (const toml::table* req = t["config"]["requires"].as_table())
    for (const auto& [key, value] : *req)
      if (auto field = value.value<std::string>()) map.requires_field.emplace_back(std::string(key.str()), *field);
  if (const toml::array* variants = t["variant"].as_array())
    for (const auto& v : *variants) {
      const toml::table* vt = v.as_table();
      if (!vt || !(*vt)["if_key"].is_string() || !(*vt)["model_type"].is_string())
        return error(map.path + ": each [[variant]] needs if_key and model_type");
      map.variants.push_back({(*vt)["if_key"].value_or(std::string()), (*vt)["model_type"].value_or(std::string()),
                              strings((*vt)["architectures"])});
    }
  if (const toml::table* config = t["config"].as_table())
    for (const auto& [key, value] : *config) {
      if (value.is_table() && (std::string(key.str()) == "none" || std::string(key.str()) == "defaults" ||
                               std::string(key.str()) == "same_as" || std::string(key.str()) == "requires"))
        continue;
      GgufConfigField f;
      f.field = std::string(key.str());
      if (auto k = value.value<std::string>()) {
        f.keys = {*k};
      } else if (const toml::table* d = value.as_table()) {
        if (auto k = (*d)["key"].value<std::string>()) f.keys = {*k};
        if (const toml::array* ks = (*d)["key"].as_array())
          for (const auto& k : *ks)
            if (auto s = k.value<std::string>()) f.keys.push_back(*s);
        f.minus = (*d)["minus"].value_or(std::string());
        f.times_key = (*d)["times_key"].value_or(std::string());
        f.over_key = (*d)["over_key"].value_or(std::string());
        f.times = (*d)["times"].value_or(1.0);
        if (const toml::table* values = (*d)["values"].as_table())
          for (const auto& [n, v] : *values) f.values[std::string(n.str())] = toml_to_json(v);
      }
      if (f.keys.empty()) return error(map.path + ": [config] " + f.field + " names no metadata key");
      map.config.push_back(std::move(f));
    }
  if (const toml::table* joined = t["joined"].as_table())
    for (const auto& [name, value] : *joined) {
      const toml::table* j = value.as_table();
      const toml::array* parts = j ? (*j)["parts"].as_array() : nullptr;
      if (!parts) return error(map.path + ": [joined] " + std::string(name.str()) + " needs heads and parts");
      GgufNameMap::Joined entry{std::string(name.str()), (*j)["heads"].value_or(std::string()), {}};
      for (const auto& p : *parts)
        if (auto s = p.value<std::string>()) {
          const bool transposed = s->size() > 2 && s->compare(s->size() - 2, 2, "^T") == 0;
          entry.parts.push_back({transposed ? s->substr(0, s->size() - 2) : *s, transposed});
        }
      map.joined.push_back(std::move(entry));
    }
  ARCH_TRY(map.tensors, string_table(t, "tensors", map.path));
  ARCH_TRY(map.rows_interleaved, string_table(t, "rows_interleaved", map.path));
  if (const toml::table* none = t["config"]["none"].as_table())
    for (const auto& [key, value] : *none) map.none[std::string(key.str())] = toml_to_json(value);
  if (const toml::table* same = t["config"]["same_as"].as_table())
    for (const auto& [key, value] : *same)
      if (auto other = value.value<std::string>()) map.same_as.emplace_back(std::string(key.str()), *other);
  if (const toml::table* defaults = t["config"]["defaults"].as_table())
    for (const auto& [key, value] : *defaults) map.defaults[std::string(key.str())] = toml_to_json(value);
  if (const toml::table* shifted = t["shifted"].as_table())
    for (const auto& [key, value] : *shifted) {
      auto by = value.value<double>();
      if (!by) return error(map.path + ": [shifted] " + std::string(key.str()) + " is not a number");
      map.shifted.emplace_back(std::string(key.str()), *by);
    }
  if (const toml::array* transposed = t["transposed"].as_array())
    for (const auto& e : *transposed) {
      auto name = e.value<std::string>();
      if (!name) return error(map.path + ": transposed holds something other than a tensor name");
      map.transposed.push_back(*name);
    }
  return map;
}

Result<json> gguf_config(const GgufNameMap& map, const GgufFile& file) {
  json config = json::object();
  config["model_type"] = map.model_type;
  if (!map.architectures.empty()) config["architectures"] = map.architectures;
  for (const auto& v : map.variants)
    if (file.find(fill(v.if_key, "{arch}", map.architecture))) {
      config["model_type"] = v.model_type;
      config["architectures"] = v.architectures;
      break;
    }
  std::set<std::string> dropped;  // nested objects a "none" value removes
  for (const GgufConfigField& f : map.config) {
    json value;
    if (!f.values.empty()) {
      auto found = lookup(f, file, map.architecture);
      if (!found) continue;  // values the map does not know: the template's default
      value = *found;
    } else {
      const GgufValue* v = file.find(fill(f.keys[0], "{arch}", map.architecture));
      if (!v) continue;
      value = v->value;
    }
    if (!f.minus.empty()) {
      const GgufValue* less = file.find(fill(f.minus, "{arch}", map.architecture));
      if (!less || !value.is_number_integer() || !less->value.is_number_integer()) continue;
      value = value.get<int64_t>() - less->value.get<int64_t>();
    }
    if (f.times != 1 && value.is_number()) value = value.get<double>() * f.times;
    if (!f.times_key.empty() || !f.over_key.empty()) {
      const GgufValue* by = f.times_key.empty() ? nullptr : file.find(fill(f.times_key, "{arch}", map.architecture));
      const GgufValue* over = f.over_key.empty() ? nullptr : file.find(fill(f.over_key, "{arch}", map.architecture));
      if ((!f.times_key.empty() && (!by || !by->value.is_number())) ||
          (!f.over_key.empty() && (!over || !over->value.is_number() || over->value.get<double>() == 0)) ||
          !value.is_number())
        continue;
      double x = value.get<double>();
      if (by) x *= by->value.get<double>();
      if (over) x /= over->value.get<double>();
      value = x;
    }
    // A FLOAT32 key may hold NaN or Inf, which config.json cannot: a rope
    // base or an epsilon of NaN would run as NaN logits (and a JSON dump
    // would print it as null, the template's default).
    if (value.is_number_float() && !std::isfinite(value.get<double>()))
      return error(file.path + ": metadata '" + fill(f.keys[0], "{arch}", map.architecture) + "' (config field " +
                   f.field + ") is " + std::to_string(value.get<double>()) + ", not a finite number");
    auto none = map.none.find(f.field);
    if (none != map.none.end() && value == none->second) {
      dropped.insert(f.field.substr(0, f.field.find('.')));
      continue;
    }
    set_field(config, f.field, value);
  }
  for (const std::string& top : dropped) config.erase(top);
  // What every GGUF says alike, whatever its architecture.
  if (!config.contains("vocab_size")) {
    const GgufValue* tokens = file.find("tokenizer.ggml.tokens");
    const GgufTensorInfo* embed = file.tensor("token_embd.weight");
    if (tokens && tokens->value.is_array()) config["vocab_size"] = tokens->value.size();
    else if (embed && embed->ne.size() == 2) config["vocab_size"] = embed->ne[1];
  }
  config["tie_word_embeddings"] = file.tensor("output.weight") == nullptr;
  for (const char* id : {"bos", "eos", "pad"})
    if (const GgufValue* v = file.find(std::string("tokenizer.ggml.") + id + "_token_id");
        v && v->value.is_number_unsigned() && v->value.get<uint64_t>() < (1ull << 31))
      config[std::string(id) + "_token_id"] = v->value;
  for (const auto& [field, tensor] : map.config_tensors)
    if (const GgufTensorInfo* info = file.tensor(tensor)) {
      ARCH_TRY(Tensor t, gguf_tensor(file, *info));
      const Tensor f = to_f32(t);
      if (!std::all_of(f.f32(), f.f32() + f.numel(), [](float x) { return std::isfinite(x); }))
        return error(file.path + ": tensor '" + tensor + "' (config field " + field + ") holds a value that is not a "
                     "finite number");
      set_field(config, field, json(std::vector<float>(f.f32(), f.f32() + f.numel())));
    }
  for (const auto& [field, value] : map.defaults.items()) set_if_unset(config, field, value);
  for (const auto& [field, other] : map.same_as)
    if (const json* v = field_at(config, other)) set_if_unset(config, field, json(*v));
  // An object left without what makes it one (rope_scaling with only its
  // original context: the file scales nothing) is no field at all.
  for (const auto& [object, needed] : map.requires_field)
    if (config.contains(object) && !field_at(config, needed)) config.erase(object);
  if (const GgufTensorInfo* freqs = map.rope_freqs.empty() ? nullptr : file.tensor(map.rope_freqs)) {
    ARCH_TRY(Tensor divisors, gguf_tensor(file, *freqs));
    // The file's own values, whatever type a damaged one gives them.
    auto number = [&](const char* field, double otherwise) {
      auto it = config.find(field);
      return it != config.end() && it->is_number() ? it->get<double>() : otherwise;
    };
    const double theta = number("rope_theta", 10000.0), heads = number("num_attention_heads", 0);
    int64_t head_dim = int64_t(number("head_dim", 0));
    if (head_dim <= 0 && heads >= 1) head_dim = int64_t(number("hidden_size", 0) / heads);
    ARCH_TRY(json scaling, llama3_rope_scaling(divisors, theta, head_dim, file.path + ": tensor '" + map.rope_freqs + "'"));
    config["rope_scaling"] = scaling;
  }
  return config;
}

}  // namespace arch

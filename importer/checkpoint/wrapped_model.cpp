#include "importer/checkpoint/wrapped_model.h"

#include "importer/checkpoint/config.h"

namespace arch {

Status unwrap(Checkpoint& ckpt, const Unwrap& u) {
  if (!u.config_key.empty()) {
    auto it = ckpt.config.find(u.config_key);
    if (it == ckpt.config.end() || !it->is_object())
      return error(ckpt.dir + "/config.json: expected an object '" + u.config_key + "' (the wrapped text model's config)");
    nlohmann::json inner = *it;
    for (auto& [key, value] : ckpt.config.items())
      if (!inner.contains(key) && !(value.is_object() && key.size() > 7 && key.substr(key.size() - 7) == "_config"))
        inner[key] = value;
    ckpt.config = std::move(inner);
  }
  // Defaults fill what the config leaves out; "text_config.vocab_size"
  // fills a field of a nested config (made where it is absent).
  for (auto& [key, value] : u.defaults.items()) {
    nlohmann::json* at = &ckpt.config;
    std::string field = key;
    if (auto dot = key.find('.'); dot != std::string::npos) {
      nlohmann::json& inner = ckpt.config[key.substr(0, dot)];
      if (inner.is_null()) inner = nlohmann::json::object();
      if (!inner.is_object()) return error(ckpt.dir + "/config.json: '" + key.substr(0, dot) + "' is not an object");
      at = &inner;
      field = key.substr(dot + 1);
    }
    if (!at->contains(field) || (*at)[field].is_null()) (*at)[field] = value;
  }
  if (!u.config_key.empty() || !u.defaults.empty()) normalize_config(ckpt.config);
  if (u.prefixes.empty()) return {};
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> files;
  for (auto& [name, t] : ckpt.tensors) {
    std::string renamed = name;
    for (const auto& [from, to] : u.prefixes)
      if (name.compare(0, from.size(), from) == 0) {
        renamed = to + name.substr(from.size());
        break;
      }
    if (tensors.count(renamed))
      return error(ckpt.dir + ": tensors '" + name + "' and another both map to '" + renamed + "'");
    tensors.emplace(renamed, t);
    files.emplace(renamed, ckpt.tensor_file[name]);
  }
  ckpt.tensors = std::move(tensors);
  ckpt.tensor_file = std::move(files);
  return {};
}

}  // namespace arch

#include "importer/text/pooling_card.h"

#include <nlohmann/json.hpp>

namespace arch {

namespace {

using json = nlohmann::json;

Result<json> parse(const std::string& text, const std::string& name) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return error(name + ": not valid JSON");
  return j;
}

// A module folder named by modules.json: plain names under the checkpoint.
bool inside(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

Result<PoolingCard> read_pooling_card(const ReadSideFile& read) {
  PoolingCard card;
  ARCH_TRY(auto modules_text, read("modules.json"));
  if (!modules_text) return card;
  ARCH_TRY(json modules, parse(*modules_text, "modules.json"));
  if (!modules.is_array()) return error("modules.json: must be a list of modules");
  for (const json& m : modules) {
    const std::string type = m.is_object() ? m.value("type", "") : "";
    if (type.ends_with(".Normalize")) card.normalize = true;
    if (!type.ends_with(".Pooling")) continue;
    const std::string path = m.value("path", "");
    if (!inside(path)) return error("modules.json: the Pooling module's path '" + path + "' is not a folder in the checkpoint");
    const std::string name = path + "/config.json";
    ARCH_TRY(auto text, read(name));
    if (!text) return error(name + ": missing (modules.json names a Pooling module there)");
    ARCH_TRY(json c, parse(*text, name));
    if (!c.is_object()) return error(name + ": must be an object");
    const std::pair<const char*, Pooling> modes[] = {{"pooling_mode_cls_token", Pooling::Cls},
                                                     {"pooling_mode_mean_tokens", Pooling::Mean},
                                                     {"pooling_mode_max_tokens", Pooling::Max},
                                                     {"pooling_mode_lasttoken", Pooling::LastToken}};
    int chosen = 0;
    for (const auto& [field, mode] : modes)
      if (c.value(field, false) == true) card.pooling = mode, ++chosen;
    for (const char* field : {"pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens"})
      if (c.value(field, false) == true) return error(name + ": " + field + " is not a pooling this runtime has (cls, mean, max, lasttoken)");
    if (chosen != 1)
      return error(name + ": " + (chosen ? "several pooling modes at once (their concatenation) are" : "no pooling mode is") +
                   " not supported; one of pooling_mode_cls_token, _mean_tokens, _max_tokens, _lasttoken");
    card.source = name;
  }
  return card;
}

Result<Pooling> parse_pooling(const std::string& name) {
  for (Pooling p : {Pooling::Mean, Pooling::Cls, Pooling::Max, Pooling::LastToken, Pooling::Pooler})
    if (name == pooling_name(p)) return p;
  return error("pooling '" + name + "' is not one of mean, cls, max, last, pooler");
}

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Max: return "max";
    case Pooling::LastToken: return "last";
    case Pooling::Pooler: return "pooler";
  }
  return "mean";
}

}  // namespace arch

#include "engine/runtime/dispatch.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <toml++/toml.h>

namespace arch {

namespace fs = std::filesystem;

std::string families_dir(const std::string& override_dir) {
  if (!override_dir.empty()) return override_dir;
  if (const char* env = std::getenv("ARCHETYPE_FAMILIES"); env && *env) return env;
  return ARCHETYPE_FAMILIES_DIR;
}

std::string built_in_families_dir() { return ARCHETYPE_FAMILIES_DIR; }

Result<Registry> load_registry(const std::string& dir) {
  Registry reg;
  reg.path = (fs::path(dir) / "registry.toml").string();
  toml::table tbl;
  try {
    tbl = toml::parse_file(reg.path);
  } catch (const toml::parse_error& e) {
    const auto& where = e.source().begin;
    return error(reg.path + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
                 ": error: " + std::string(e.description()));
  }
  if (auto* generic = tbl["generic_config_fields"].as_array())
    for (auto& x : *generic)
      if (auto s = x.value<std::string>()) reg.generic_config_fields.push_back(*s);
  const toml::array* fams = tbl["family"].as_array();
  if (!fams) return error(reg.path + ": error: no [[family]] entries");
  auto strings = [](const toml::node_view<const toml::node> n) {
    std::vector<std::string> out;
    if (auto* a = n.as_array())
      for (auto& x : *a)
        if (auto s = x.value<std::string>()) out.push_back(*s);
    return out;
  };
  // A list of ["a", "b"] pairs (absent: none); what names the list in errors.
  auto string_pairs = [&](const toml::node_view<const toml::node> n, const std::string& what,
                          const char* shape) -> Result<std::vector<std::pair<std::string, std::string>>> {
    std::vector<std::pair<std::string, std::string>> out;
    if (auto* pairs = n.as_array())
      for (auto& pr : *pairs) {
        auto* a = pr.as_array();
        if (!a || a->size() != 2 || !a->get(0)->is_string() || !a->get(1)->is_string())
          return error(reg.path + ": error: " + what + " must be " + shape + " pairs");
        out.emplace_back(a->get(0)->value_or(std::string()), a->get(1)->value_or(std::string()));
      }
    return out;
  };
  // A config class's defaults (a table of numbers, bools and strings; a
  // dotted key names a field of a nested config: "text_config.vocab_size").
  auto read_defaults = [](const toml::node_view<const toml::node> n, nlohmann::json& out) {
    if (auto* d = n.as_table())
      for (auto& [key, value] : *d) {
        if (auto i = value.value<int64_t>(); value.is_integer()) out[std::string(key.str())] = *i;
        else if (auto x = value.value<double>()) out[std::string(key.str())] = *x;
        else if (auto b = value.value<bool>()) out[std::string(key.str())] = *b;
        else if (auto str = value.value<std::string>()) out[std::string(key.str())] = *str;
      }
  };
  for (const auto& node : *fams) {
    const toml::table* t = node.as_table();
    if (!t) return error(reg.path + ": error: each [[family]] must be a table");
    FamilyEntry f;
    f.name = t->get("name") ? t->get("name")->value_or(std::string()) : "";
    std::string tmpl = t->get("template") ? t->get("template")->value_or(std::string()) : "";
    if (f.name.empty() || tmpl.empty())
      return error(reg.path + ": error: a [[family]] needs 'name' and 'template'");
    f.template_path = (fs::path(dir) / tmpl).string();
    toml::node_view<const toml::node> view(*t);
    f.model_types = strings(view["model_types"]);
    f.architectures = strings(view["architectures"]);
    for (std::string s : strings(view["signature"])) {
      if (!s.empty() && s[0] == '!') f.absent.push_back(s.substr(1));
      else f.signature.push_back(std::move(s));
    }
    ARCH_TRY(f.tensor_names.prefixes,
             string_pairs(view["tensor_prefixes"], "tensor_prefixes of " + f.name, "[\"from\", \"to\"]"));
    read_defaults(view["defaults"], f.tensor_names.defaults);
    if (auto* wrappers = view["wrapper"].as_array()) {
      for (auto& w : *wrappers) {
        const toml::table* wt = w.as_table();
        std::string mt = wt && wt->get("model_type") ? wt->get("model_type")->value_or(std::string()) : "";
        if (mt.empty()) return error(reg.path + ": error: a [[family.wrapper]] of " + f.name + " needs 'model_type'");
        Wrapper wrapper;
        Unwrap& u = wrapper.unwrap;
        u.config_key = wt->get("config") ? wt->get("config")->value_or(std::string()) : "";
        const toml::node_view<const toml::node> wview(*wt);
        ARCH_TRY(u.prefixes, string_pairs(wview["tensor_prefixes"], "tensor_prefixes of wrapper '" + mt + "'",
                                          "[\"from\", \"to\"]"));
        read_defaults(wview["defaults"], u.defaults);
        ARCH_TRY(auto notes, string_pairs(wview["unread"], "unread of wrapper '" + mt + "'", "[\"name\", \"why\"]"));
        for (auto& [name, why] : notes) wrapper.unread.push_back({name, why});
        f.wrappers[mt] = std::move(wrapper);
      }
    }
    for (const auto& other : reg.families)
      for (const auto& mt : f.model_types)
        for (const auto& omt : other.model_types)
          if (mt == omt)
            return error(reg.path + ": error: model_type '" + mt + "' is listed by both " +
                         other.name + " and " + f.name);
    reg.families.push_back(std::move(f));
  }
  return reg;
}

namespace {

// Each family once, with its templates: "LlamaStyle (llama.arch), ViTStyle
// (vit.arch, clip_vision.arch)".
std::string families_listed(const Registry& reg) {
  std::vector<std::pair<std::string, std::string>> listed;
  for (const auto& f : reg.families) {
    const std::string file = fs::path(f.template_path).filename().string();
    auto it = std::find_if(listed.begin(), listed.end(), [&](const auto& l) { return l.first == f.name; });
    if (it == listed.end()) listed.push_back({f.name, file});
    else it->second += ", " + file;
  }
  std::string names;
  for (const auto& [name, files] : listed) names += (names.empty() ? "" : ", ") + name + " (" + files + ")";
  return names;
}

}  // namespace

Result<DispatchResult> dispatch(const Registry& reg, const nlohmann::json& config,
                                const std::function<bool(const std::string&)>& has_tensor) {
  const std::string model_type = model_type_of(config);
  // An architecture a family lists is more than its model_type says.
  const nlohmann::json* archs = config.is_object() && config.contains("architectures") ? &config["architectures"] : nullptr;
  if (archs && archs->is_array() && !archs->empty() && (*archs)[0].is_string()) {
    const std::string arch = (*archs)[0].get<std::string>();
    for (const auto& f : reg.families)
      for (const auto& a : f.architectures)
        if (a == arch)
          return DispatchResult{&f, "architecture '" + arch + "' is listed for " + f.name + " in " + reg.path};
  }
  for (const auto& f : reg.families)
    for (const auto& mt : f.model_types)
      if (mt == model_type)
        return DispatchResult{&f, "model_type '" + model_type + "' is listed for " + f.name +
                                      " in " + reg.path};
  for (const auto& f : reg.families) {
    auto w = f.wrappers.find(model_type);
    if (w != f.wrappers.end()) {
      const Unwrap& u = w->second.unwrap;
      return DispatchResult{&f, "model_type '" + model_type + "' wraps a " + f.name + " text model (" +
                                    (u.config_key.empty() ? std::string("its config") : u.config_key) + ", per " +
                                    reg.path + ")",
                            &u, false, w->second.unread};
    }
  }
  std::vector<const FamilyEntry*> matches;
  // A signature tensor counts under the family's own tensor prefixes too.
  auto present = [&](const FamilyEntry& f, const std::string& name) {
    if (has_tensor(name)) return true;
    for (const auto& [from, to] : f.tensor_names.prefixes)
      if (name.compare(0, to.size(), to) == 0 && has_tensor(from + name.substr(to.size()))) return true;
    return false;
  };
  for (const auto& f : reg.families) {
    bool all = !f.signature.empty();
    for (const auto& s : f.signature) all = all && present(f, s);
    for (const auto& s : f.absent) all = all && !present(f, s);
    if (all) matches.push_back(&f);
  }
  if (matches.size() == 1) {
    DispatchResult d{matches[0], "model_type '" + model_type + "' is not listed; the tensors of " + matches[0]->name +
                                     "'s signature are all present" +
                                     (matches[0]->absent.empty() ? "" : " and those it rules out absent")};
    d.by_signature = true;
    return d;
  }
  if (matches.size() > 1) {
    std::string m;
    for (auto* f : matches) m += (m.empty() ? "" : ", ") + f->name;
    return error("ambiguous checkpoint: model_type '" + model_type +
                 "' is not listed and the tensors fit several families: " + m +
                 " (list the model_type in " + reg.path + ")");
  }
  return error("no family for model_type '" + model_type + "': it is not listed in " + reg.path +
               " and no family's signature tensors are all present (candidates: " + families_listed(reg) + ")");
}

std::string model_type_of(const nlohmann::json& config) {
  auto it = config.is_object() ? config.find("model_type") : config.end();
  if (it != config.end() && it->is_string()) return it->get<std::string>();
  // A diffusers config names its class instead (DiTTransformer2DModel).
  it = config.is_object() ? config.find("_class_name") : config.end();
  return it != config.end() && it->is_string() ? it->get<std::string>() : std::string();
}

Result<DispatchResult> dispatch_forced(const Registry& reg, const std::string& name) {
  std::vector<const FamilyEntry*> found;
  for (const auto& f : reg.families)
    if (f.name == name || fs::path(f.template_path).filename().string() == name) found.push_back(&f);
  if (found.size() == 1)
    return DispatchResult{found[0], "--force-family " + name + " (" + fs::path(found[0]->template_path).filename().string() + ")"};
  if (found.empty())
    return error("--force-family " + name + ": no such family in " + reg.path + " (it has: " + families_listed(reg) + ")");
  return error("--force-family " + name + ": several templates are " + name + "; name one by its file (" +
               families_listed(reg) + ")");
}

std::vector<std::string> unread_config_fields(const nlohmann::json& config, const std::vector<std::string>& read,
                                              const Registry* reg) {
  std::vector<std::string> out;
  if (!config.is_object()) return out;
  for (auto it = config.begin(); it != config.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(read.begin(), read.end(), key) != read.end()) continue;
    if (reg && std::find(reg->generic_config_fields.begin(), reg->generic_config_fields.end(), key) !=
                   reg->generic_config_fields.end())
      continue;
    out.push_back(key);
  }
  return out;
}

Status apply_views(Checkpoint& ckpt, const DispatchResult& d) {
  if (d.unwrap) ARCH_TRY_STATUS(unwrap(ckpt, *d.unwrap));
  if (!d.family->tensor_names.prefixes.empty() || !d.family->tensor_names.defaults.empty())
    ARCH_TRY_STATUS(unwrap(ckpt, d.family->tensor_names));
  return {};
}

}  // namespace arch

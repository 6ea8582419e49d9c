#include "importer/text/chat_template/load.h"

#include <algorithm>
#include <filesystem>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"

namespace arch {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

Result<std::string> read_text(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  return std::string(file->text());
}

// A special token: "text", {"content": "text", ...} (AddedToken), or null.
Result<std::optional<std::string>> token_text(const json& config, const char* key, const std::string& path) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::optional<std::string>();
  if (it->is_string()) return std::optional<std::string>(it->get<std::string>());
  if (it->is_object()) {
    auto c = it->find("content");
    if (c != it->end() && c->is_string()) return std::optional<std::string>(c->get<std::string>());
  }
  return error(path + ": '" + key + "' must be a string or an object with a string 'content', not " +
               json_type_name(*it));
}

}  // namespace

nlohmann::ordered_json ChatTemplateInfo::context(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                                 const nlohmann::ordered_json& tools,
                                                 const nlohmann::ordered_json& documents) const {
  nlohmann::ordered_json ctx = nlohmann::ordered_json::object();
  ctx["messages"] = messages;
  ctx["tools"] = tools;
  ctx["documents"] = documents;
  ctx["add_generation_prompt"] = add_generation_prompt;
  for (auto it = special_tokens.begin(); it != special_tokens.end(); ++it) ctx[it.key()] = it.value();
  return ctx;
}

namespace {
constexpr const char* kNoTemplate = ": no chat template";
}  // namespace

bool means_no_chat_template(const Error& e) { return e.message.find(kNoTemplate) != std::string::npos; }

Result<ChatTemplateInfo> load_chat_template(const std::string& dir, const ReadSideFile& read_given) {
  const ReadSideFile read = read_given ? read_given : side_files_in(dir);
  ChatTemplateInfo info;
  // A model file (canonical, GGUF) holds what stands for its side files.
  std::string config_path = read_given ? dir + " (its tokenizer_config.json)" : dir + "/tokenizer_config.json";
  json config = json::object();
  // From the directory, or from what `read` gives (a canonical model's metadata).
  ARCH_TRY(auto config_text, read("tokenizer_config.json"));
  ARCH_TRY(auto jinja_text, read("chat_template.jinja"));
  bool have_config = config_text.has_value();
  if (have_config) {
    ARCH_TRY(config, parse_json(*config_text, config_path));
    if (!config.is_object())
      return error(config_path + ": expected a JSON object at the top level, found " + json_type_name(config));
    static const char* kTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                    "pad_token", "cls_token", "mask_token"};
    for (const char* key : kTokens) {
      ARCH_TRY(auto tok, token_text(config, key, config_path));
      if (tok) info.special_tokens[key] = *tok;
    }
    auto extra = config.find("additional_special_tokens");
    if (extra != config.end() && extra->is_array()) {
      nlohmann::ordered_json list = nlohmann::ordered_json::array();
      for (const auto& t : *extra) {
        if (t.is_string()) list.push_back(t.get<std::string>());
        else if (t.is_object() && t.contains("content") && t["content"].is_string())
          list.push_back(t["content"].get<std::string>());
      }
      if (!list.empty()) info.special_tokens["additional_special_tokens"] = list;
    }
    ARCH_TRY(info.bos_token, token_text(config, "bos_token", config_path));
    ARCH_TRY(info.eos_token, token_text(config, "eos_token", config_path));
  }

  // Named templates beside the default one.
  std::string extra_dir = dir + "/additional_chat_templates";
  if (fs::is_directory(extra_dir)) {
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(extra_dir))
      if (entry.path().extension() == ".jinja") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      ARCH_TRY(std::string text, read_text(f.string()));
      info.named[f.stem().string()] = std::move(text);
    }
  }

  std::string jinja_path = dir + "/chat_template.jinja";
  std::string processor_path = dir + "/chat_template.json";
  auto in_config = config.find("chat_template");
  if (jinja_text) {
    info.path = jinja_path;
    info.source = *jinja_text;
    info.name = "default";
  } else if (in_config != config.end() && !in_config->is_null()) {
    info.path = config_path;
    if (in_config->is_string()) {
      info.source = in_config->get<std::string>();
      info.name = "default";
    } else if (in_config->is_array()) {
      for (const auto& item : *in_config) {
        if (!item.is_object() || !item.contains("name") || !item["name"].is_string() ||
            !item.contains("template") || !item["template"].is_string())
          return error(config_path + ": 'chat_template' list items must be {\"name\": string, \"template\": string}");
        info.named[item["name"].get<std::string>()] = item["template"].get<std::string>();
      }
    } else {
      return error(config_path + ": 'chat_template' must be a string or a list of {name, template}, not " +
                   json_type_name(*in_config));
    }
  } else if (fs::exists(processor_path)) {
    info.path = processor_path;
    ARCH_TRY(std::string text, read_text(processor_path));
    ARCH_TRY(json processor, parse_json(text, processor_path));
    auto t = processor.is_object() ? processor.find("chat_template") : processor.end();
    if (t == processor.end() || !t->is_string())
      return error(processor_path + ": expected an object with a string 'chat_template'");
    info.source = t->get<std::string>();
    info.name = "default";
  }

  if (info.name.empty()) {
    if (info.named.empty()) {
      if (!have_config)
        return error(dir + kNoTemplate + ": neither tokenizer_config.json nor chat_template.jinja exists");
      return error(config_path + kNoTemplate + " ('chat_template' is absent, and there is no chat_template.jinja)");
    }
    auto def = info.named.find("default");
    if (def == info.named.end()) {
      if (info.named.size() != 1) {
        std::string names;
        for (const auto& [n, t] : info.named) names += (names.empty() ? "" : ", ") + n;
        return error(info.path + ": several chat templates (" + names + ") and none is called 'default'");
      }
      def = info.named.begin();
    }
    info.name = def->first;
    info.source = def->second;
    if (info.path.empty()) info.path = extra_dir + "/" + info.name + ".jinja";
  }

  auto parsed = parse_chat_template(info.source);
  if (!parsed.ok()) return error(info.path + ": " + parsed.error().message);
  info.chat_template = std::move(*parsed);
  return info;
}

}  // namespace arch

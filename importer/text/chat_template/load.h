// Finding a checkpoint's chat template and the special tokens it is rendered
// with, where transformers finds them:
//   1. DIR/chat_template.jinja (transformers >= 4.43 writes it; it overrides
//      the config's template), plus DIR/additional_chat_templates/NAME.jinja;
//   2. tokenizer_config.json "chat_template": a string, or a list of
//      {"name": ..., "template": ...} of which "default" is used;
//   3. DIR/chat_template.json {"chat_template": ...} (processors).
// Special tokens (bos_token, eos_token, unk_token, pad_token, ...) come from
// tokenizer_config.json, as strings or AddedToken objects {"content": ...}.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/text/chat_template/chat_template.h"
#include "importer/text/side_files.h"

namespace arch {

struct ChatTemplateInfo {
  std::string path;    // the file the template text came from
  std::string name;    // "default", or the only template there is
  std::string source;  // the template text
  ChatTemplate chat_template;                  // source, parsed
  std::map<std::string, std::string> named;    // every named template, when there are several
  std::optional<std::string> bos_token, eos_token;
  // The special tokens transformers passes to the template as variables
  // (only those that are set): bos_token, eos_token, unk_token, sep_token,
  // pad_token, cls_token, mask_token, additional_special_tokens.
  nlohmann::ordered_json special_tokens = nlohmann::ordered_json::object();

  // The variables apply_chat_template renders with: messages,
  // add_generation_prompt, tools and documents (null when not given), then
  // the special tokens.
  nlohmann::ordered_json context(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                 const nlohmann::ordered_json& tools = nullptr,
                                 const nlohmann::ordered_json& documents = nullptr) const;
};

// Errors name the file: no template anywhere, invalid JSON (line and
// column), a chat_template of the wrong type, named templates without a
// "default", and template syntax errors ("DIR/tokenizer_config.json:
// chat_template:3:5: ...").
// `read`: where tokenizer_config.json and chat_template.jinja come from
// (unset: `dir` itself).
Result<ChatTemplateInfo> load_chat_template(const std::string& dir, const ReadSideFile& read = nullptr);

// Whether load_chat_template's error says the model has no template at
// all (a base model), as opposed to one it could not read.
bool means_no_chat_template(const Error& e);

}  // namespace arch

// Hugging Face chat templates: the Jinja `chat_template` of
// tokenizer_config.json, rendered by an interpreter of our own to the same
// bytes transformers' apply_chat_template(tokenize=False) produces (jinja2
// with trim_blocks, lstrip_blocks, loop controls, raise_exception,
// strftime_now and a `tojson` that does not escape HTML).
//
//   ARCH_TRY(auto tmpl, parse_chat_template(source));
//   nlohmann::ordered_json ctx = {{"messages", messages},
//                                 {"add_generation_prompt", true},
//                                 {"bos_token", "<s>"}, {"eos_token", "</s>"}};
//   ARCH_TRY(std::string prompt, tmpl.render(ctx));
//
// Pass the context as nlohmann::ordered_json to keep key order: `tojson` and
// `items` see keys in the order given, as Python dicts keep them
// (nlohmann::json sorts keys).
//
// Errors, from parsing and from rendering, read
// "chat_template:LINE:COL: message", e.g.
//   chat_template:3:12: unknown filter 'trimm'
//   chat_template:1:1: 'for' block is never closed: expected 'endfor' or 'else' ...
//   chat_template:9:8: raise_exception: Conversation roles must alternate ...
//   chat_template:4:20: 'dict object' has no attribute 'content'   (used as undefined)
//
// Not supported (an error naming the construct and its position): the tags
// block/extends/include/import/from/call/autoescape, recursive for loops,
// the filters groupby, pprint, random, striptags, truncate, urlencode, urlize,
// wordwrap, xmlattr, filesizeformat, and a few Python str methods (encode,
// translate, ...). Known differences from jinja2, none of which real chat
// templates rely on: integers are 64-bit (overflow is an error, not a big
// int); `safe`/`escape` give plain strings (no Markup escaping on `+`);
// iterators, functions and range slices print differently from Python's
// reprs; jinja2's constant folding of literal-only expressions is not
// reproduced; case mapping outside Latin, Greek, Cyrillic and Armenian leaves
// characters unchanged. See importer/text/chat_template/README.md.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch {

namespace jinja {
struct Stmt;
}

class ChatTemplate {
 public:
  ChatTemplate();  // the empty template: renders ""

  // `context` must be an object: messages (list of {role, content, ...}),
  // add_generation_prompt, bos_token, eos_token, tools, documents, and any
  // other variable the template reads.
  Result<std::string> render(const nlohmann::json& context) const;
  Result<std::string> render(const nlohmann::ordered_json& context) const;

  // Fixes what strftime_now() returns (for reproducible prompts and tests);
  // by default it reads the clock.
  void set_now(std::chrono::system_clock::time_point now) { now_ = now; }

  const std::string& source() const { return source_; }

 private:
  friend Result<ChatTemplate> parse_chat_template(std::string_view source);
  std::string source_;
  std::shared_ptr<const std::vector<std::unique_ptr<jinja::Stmt>>> body_;
  std::optional<std::chrono::system_clock::time_point> now_;
};

Result<ChatTemplate> parse_chat_template(std::string_view source);

}  // namespace arch

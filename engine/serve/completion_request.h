// The body of POST /v1/completions or /v1/chat/completions, read and checked
// field by field as the OpenAI API defines them; what this server does not
// do (n > 1, tools, echo) is refused by name rather than ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/serve/api_error.h"
#include "engine/serve/tool_calls.h"

namespace arch::serve {

struct CompletionRequest {
  bool chat = false;
  std::string model;                    // "" where the request names none
  // chat: [{"role", "content"}, ...], content as text, or, where a
  // message holds images, as parts ({"type": "image"} and {"type": "text"})
  // in order, as chat templates of vision-language models read them.
  nlohmann::ordered_json messages;
  // The images' bytes (image_url parts' data URLs), in the order the
  // messages hold them, and the field each came from (for a 400 naming it).
  std::vector<std::string> images, image_fields;
  std::string prompt;                   // completions: text ...
  std::vector<int32_t> prompt_ids;      // ... or token ids
  bool prompt_is_ids = false;
  std::optional<int64_t> max_tokens;    // unset: as many as the context holds
  double temperature = 1.0;             // 0: greedy
  double top_p = 1.0;
  std::optional<uint64_t> seed;
  double presence_penalty = 0.0;        // -2 to 2: once on each id already drawn
  double frequency_penalty = 0.0;       // -2 to 2: on each id per time drawn
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id -> -100 to 100
  int top_logprobs = -1;                // >= 0: each token's logprob and this many alternatives
  std::vector<std::string> stop;        // up to 4
  bool stream = false;
  bool ignore_eos = false;              // llama.cpp's extension: run to max_tokens (benchmarks)
  // response_format: {"type": "json_object"} or {"type": "json_schema",
  // "json_schema": {"schema": ...}}, as the GBNF grammar the reply is held
  // to ("" for text); or llama-server's `grammar` (GBNF) or `json_schema`.
  std::string grammar;
  std::string grammar_field;            // the field it came from (for a 400 naming it)
  // Chat: the functions the model may call, as given (for the chat
  // template) and read; tool_choice auto, none, required, or a name.
  nlohmann::ordered_json tools_json;
  std::vector<Tool> tools;
  std::string tool_choice = "auto", tool_choice_name;
  bool parallel_tool_calls = true;      // false: a reply's first call only
};

// The request, or the error to reply with (status 400, the field named).
std::variant<CompletionRequest, ApiError> parse_completion_request(const std::string& body, bool chat);

// The bytes of the request's prompt text (chat: its messages' contents),
// as the server bounds them before tokenizing.
int64_t prompt_bytes(const CompletionRequest& r);

// The body as a JSON object, or the 400 for one that is not (nested past
// json_depth, a key given twice).
std::variant<nlohmann::json, ApiError> parse_json_object(const std::string& body);

// Field `name` of object `j` as text: `fallback` where it is absent or
// null, the 400 naming it where it is not a string.
std::variant<std::string, ApiError> string_field(const nlohmann::json& j, const char* name, std::string fallback);

}  // namespace arch::serve

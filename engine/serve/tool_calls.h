// Tool (function) calls as the OpenAI API has them: the request's `tools`
// read, the way the checkpoint's chat template writes a call (found from the
// template's own markers), a grammar that makes the model write a call
// (tool_choice required, or a named function: its arguments held to the
// function's JSON Schema), and a reply's text read back into `tool_calls`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch::serve {

struct Tool {
  std::string name;
  nlohmann::ordered_json parameters;  // a JSON Schema of the arguments ({} : any object)
};

// How a chat template's model writes a call:
//   tagged: <tool_call>{"name": ..., "arguments": {...}}</tool_call> (Qwen, Hermes)
//   bracketed: [TOOL_CALLS][{"name": ..., "arguments": {...}}] (Mistral)
//   bare: {"name": ..., "parameters": {...}} (Llama 3.x)
enum class ToolFormat { tagged, bracketed, bare };
// From the template's text; none where it shows no way to write a call.
std::optional<ToolFormat> tool_format(const std::string& chat_template);
const char* tool_format_name(ToolFormat f);

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text, as the API sends it
};

// GBNF for a reply that is one call of one of `tools` (all of them, or the
// one named), its arguments valid under the tool's parameters.
Result<std::string> tool_call_gbnf(ToolFormat f, const std::vector<Tool>& tools, const std::string& only);

// The calls a reply's text holds (none: an answer in words; the first
// alone where `parallel` is false, as parallel_tool_calls: false asks), and
// the text outside them.
struct ParsedReply {
  std::string content;
  std::vector<ToolCall> calls;
};
ParsedReply parse_tool_calls(const std::string& text, ToolFormat f, bool parallel = true);

}  // namespace arch::serve

#include "engine/serve/tool_calls.h"

#include "engine/core/json_text.h"
#include "engine/runtime/grammar.h"
#include "engine/runtime/json_schema_grammar.h"

namespace arch::serve {

std::optional<ToolFormat> tool_format(const std::string& t) {
  if (t.find("<tool_call>") != std::string::npos) return ToolFormat::tagged;
  if (t.find("[TOOL_CALLS]") != std::string::npos) return ToolFormat::bracketed;
  if (t.find("tools") != std::string::npos && (t.find("\"parameters\"") != std::string::npos || t.find("'parameters'") != std::string::npos ||
                                               t.find("<|python_tag|>") != std::string::npos))
    return ToolFormat::bare;
  return std::nullopt;
}

const char* tool_format_name(ToolFormat f) {
  return f == ToolFormat::tagged ? "<tool_call> JSON" : f == ToolFormat::bracketed ? "[TOOL_CALLS] JSON" : "bare JSON";
}

Result<std::string> tool_call_gbnf(ToolFormat f, const std::vector<Tool>& tools, const std::string& only) {
  const char* args_key = f == ToolFormat::bare ? "parameters" : "arguments";
  std::string calls, rules;
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!only.empty() && tools[i].name != only) continue;
    const auto& schema = tools[i].parameters.is_null() ? nlohmann::ordered_json::object() : tools[i].parameters;
    ARCH_TRY(SchemaRules r, json_schema_rules(schema, "tools[" + std::to_string(i) + "].function.parameters", "t" + std::to_string(i) + "-"));
    rules += r.rules;
    const std::string call = "\"{\" ws \"\\\"name\\\"\" ws \":\" ws " + gbnf_literal(nlohmann::ordered_json(tools[i].name).dump()) +
                             " ws \",\" ws " + gbnf_literal(std::string("\"") + args_key + "\"") + " ws \":\" ws " + r.top + " ws \"}\"";
    calls += (calls.empty() ? "" : " | ") + std::string("( ") + call + " )";
  }
  if (calls.empty()) return error("tool_choice names '" + only + "', which 'tools' has not");
  std::string root;
  if (f == ToolFormat::tagged) root = "\"<tool_call>\" \"\\n\"? ( " + calls + " ) \"\\n\"? \"</tool_call>\"";
  else if (f == ToolFormat::bracketed) root = "\"[TOOL_CALLS]\" \" \"? \"[\" ( " + calls + " ) \"]\"";
  else root = "( " + calls + " )";
  return "root ::= \" \"? " + root + "\n" + json_common_gbnf() + rules;
}

namespace {

// A call object {"name": ..., "arguments" | "parameters": {...}}, or nothing.
std::optional<ToolCall> call_of(const nlohmann::ordered_json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  ToolCall c{j["name"].get<std::string>(), "{}"};
  for (const char* key : {"arguments", "parameters"})
    if (j.contains(key)) c.arguments = j[key].is_string() ? j[key].get<std::string>() : j[key].dump();
  return c;
}

// The JSON value starting at `at` (an object or an array), and where it ends.
std::optional<nlohmann::ordered_json> json_at(const std::string& text, size_t at, size_t& end) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = at; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if ((c == '}' || c == ']') && --depth == 0) {
      end = i + 1;
      auto j = parse_ordered_json(text.substr(at, end - at), "a tool call");
      if (!j.ok()) return std::nullopt;
      return std::move(*j);
    }
  }
  return std::nullopt;
}

}  // namespace

ParsedReply parse_tool_calls(const std::string& text, ToolFormat f, bool parallel) {
  ParsedReply out;
  if (f == ToolFormat::tagged) {
    size_t at = 0;
    for (;;) {
      const size_t open = text.find("<tool_call>", at);
      if (open == std::string::npos) break;
      const size_t close = text.find("</tool_call>", open);
      out.content += text.substr(at, open - at);
      const std::string inside = text.substr(open + 11, close == std::string::npos ? std::string::npos : close - open - 11);
      const auto j = parse_ordered_json(inside, "a tool call");  // the model's text: nesting bounded
      if (auto c = j.ok() ? call_of(j.value()) : std::nullopt) out.calls.push_back(*c);
      else out.content += text.substr(open, close == std::string::npos ? std::string::npos : close + 12 - open);
      if (close == std::string::npos) return out;
      at = close + 12;
    }
    out.content += text.substr(at);
  } else if (f == ToolFormat::bracketed) {
    const size_t open = text.find("[TOOL_CALLS]");
    size_t end = 0;
    const size_t list = open == std::string::npos ? std::string::npos : text.find('[', open + 12);
    const auto j = list == std::string::npos ? std::nullopt : json_at(text, list, end);
    if (!j || !j->is_array()) {
      out.content = text;
      return out;
    }
    for (const auto& e : *j)
      if (auto c = call_of(e)) out.calls.push_back(*c);
    out.content = text.substr(0, open) + text.substr(end);
  } else {
    const size_t open = text.find('{');
    size_t end = 0;
    const auto j = open == std::string::npos ? std::nullopt : json_at(text, open, end);
    const auto c = j ? call_of(*j) : std::nullopt;
    if (!c || !(j->contains("parameters") || j->contains("arguments"))) {
      out.content = text;
      return out;
    }
    out.calls.push_back(*c);
    out.content = text.substr(0, open) + text.substr(end);
  }
  if (!parallel && out.calls.size() > 1) out.calls.resize(1);
  // Only spaces around the calls: no words.
  if (!out.calls.empty() && out.content.find_first_not_of(" \n\t\r") == std::string::npos) out.content.clear();
  return out;
}

}  // namespace arch::serve

#include "engine/serve/completion_request.h"

#include "engine/serve/data_url.h"

#include <cmath>

#include "engine/core/json_text.h"
#include "engine/runtime/json_schema_grammar.h"

namespace arch::serve {

namespace {

using json = nlohmann::json;

// Each check returns the error for its field, or nothing.
using Check = std::optional<ApiError>;

Check read_number(const json& j, const char* field, double lo, double hi, double& out) {
  if (!j.contains(field) || j[field].is_null()) return {};
  const json& v = j[field];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < lo || v.get<double>() > hi)
    return bad_request("'" + std::string(field) + "' must be a number from " + json(lo).dump() + " to " + json(hi).dump() +
                           ", got " + v.dump(),
                       field);
  out = v.get<double>();
  return {};
}

// {"token id": bias} as the OpenAI API gives it: ids as decimal strings,
// biases from -100 to 100 (whether each id is in the vocabulary is the
// server's to check).
Check read_logit_bias(const json& j, std::vector<std::pair<int32_t, float>>& out) {
  if (!j.contains("logit_bias") || j["logit_bias"].is_null()) return {};
  const json& b = j["logit_bias"];
  if (!b.is_object()) return bad_request("'logit_bias' must be an object of token ids to biases, got " + b.dump(), "logit_bias");
  for (const auto& [key, v] : b.items()) {
    const bool digits = !key.empty() && key.size() <= 9 && key.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      return bad_request("'logit_bias': keys must be token ids (decimal integers >= 0), got \"" + key + "\"", "logit_bias");
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < -100 || v.get<double>() > 100)
      return bad_request("'logit_bias': the bias of token " + key + " must be a number from -100 to 100, got " + v.dump(), "logit_bias");
    out.emplace_back(int32_t(std::stol(key)), v.get<float>());
  }
  return {};
}

// An integer field from lo to hi, where present and not null.
Check read_count(const json& j, const char* field, int lo, int hi, int& out) {
  if (!j.contains(field) || j[field].is_null()) return {};
  const json& v = j[field];
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
    return bad_request("'" + std::string(field) + "' must be an integer from " + std::to_string(lo) + " to " +
                           std::to_string(hi) + ", got " + v.dump(),
                       field);
  out = int(v.get<int64_t>());
  return {};
}

// Completions: `logprobs` the count of alternatives (0-5). Chat: `logprobs`
// true, and `top_logprobs` (0-20) with it.
Check read_logprobs(const json& j, CompletionRequest& r) {
  if (!r.chat) {
    if (j.contains("logprobs") && j["logprobs"] == false) return {};
    return read_count(j, "logprobs", 0, 5, r.top_logprobs);
  }
  bool on = false;
  if (j.contains("logprobs") && !j["logprobs"].is_null()) {
    if (!j["logprobs"].is_boolean()) return bad_request("'logprobs' must be true or false, got " + j["logprobs"].dump(), "logprobs");
    on = j["logprobs"].get<bool>();
  }
  int top = 0;
  if (auto e = read_count(j, "top_logprobs", 0, 20, top)) return e;
  if (!on && j.contains("top_logprobs") && !j["top_logprobs"].is_null())
    return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  if (on) r.top_logprobs = top;
  return {};
}

// The largest image a request may carry, decoded.
constexpr size_t kMostImageBytes = size_t(32) << 20;

// Message content: a string, or an array of text parts (joined into one
// text) and, in a chat, image_url parts whose data URLs' bytes go to
// r.images (the content then kept as parts: {"type": "image"} and
// {"type": "text", "text"}, in order).
Check read_content(const json& m, size_t i, CompletionRequest& r, nlohmann::ordered_json& content) {
  const std::string field = "messages[" + std::to_string(i) + "].content";
  if (!m.contains("content") || m["content"].is_null()) {
    content = "";
    if (m.value("role", "") == "assistant") return {};  // an assistant turn of tool calls only
    return bad_request("'" + field + "' is missing", field);
  }
  const json& c = m["content"];
  if (c.is_string()) {
    content = c.get<std::string>();
    return {};
  }
  if (!c.is_array()) return bad_request("'" + field + "' must be a string or an array of text and image_url parts", field);
  std::string text;
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  bool images = false;
  for (size_t k = 0; k < c.size(); ++k) {
    const json& part = c[k];
    const std::string at = field + "[" + std::to_string(k) + "]";
    const std::string type = part.is_object() && part.contains("type") && part["type"].is_string() ? part["type"].get<std::string>() : "";
    if (type == "text" && part.contains("text") && part["text"].is_string()) {
      text += part["text"].get<std::string>();
      parts.push_back({{"type", "text"}, {"text", part["text"]}});
      continue;
    }
    if (type != "image_url")
      return bad_request("'" + at + "': a part is {\"type\": \"text\", \"text\": ...} or {\"type\": \"image_url\", \"image_url\": {\"url\": ...}}", at);
    const json* url = part.contains("image_url") ? &part["image_url"] : nullptr;
    if (url && url->is_object()) url = url->contains("url") ? &(*url)["url"] : nullptr;
    if (!url || !url->is_string()) return bad_request("'" + at + ".image_url.url' is required", at + ".image_url");
    if (part["image_url"].is_object() && part["image_url"].contains("detail") && !part["image_url"]["detail"].is_null() &&
        part["image_url"]["detail"] != "auto")
      return bad_request("'" + at + ".image_url.detail': only \"auto\" is served (the image is prepared as the model's processor says)",
                         at + ".image_url.detail");
    auto bytes = decode_data_url(url->get<std::string>(), kMostImageBytes);
    if (!bytes.ok()) return bad_request("'" + at + ".image_url': " + bytes.error().message, at + ".image_url");
    r.images.push_back(std::move(*bytes));
    r.image_fields.push_back(at + ".image_url");
    parts.push_back({{"type", "image"}});
    images = true;
  }
  if (images) content = std::move(parts);
  else content = text;
  return {};
}

Check read_messages(const json& j, CompletionRequest& r) {
  if (!j.contains("messages")) return bad_request("'messages' is required", "messages");
  const json& ms = j["messages"];
  if (!ms.is_array() || ms.empty()) return bad_request("'messages' must be a non-empty array", "messages");
  r.messages = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ms.size(); ++i) {
    const json& m = ms[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad_request("'" + at + "' must be an object", at);
    if (!m.contains("role") || !m["role"].is_string())
      return bad_request("'" + at + ".role' is required (system, user, assistant, ...)", at + ".role");
    nlohmann::ordered_json content;
    if (auto e = read_content(m, i, r, content)) return e;
    nlohmann::ordered_json message = {{"role", m["role"].get<std::string>()}, {"content", std::move(content)}};
    // An assistant's calls, their arguments as objects (as chat templates
    // read them; the API sends JSON text), and a tool's reply to one.
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      const json& calls = m["tool_calls"];
      const std::string f = at + ".tool_calls";
      if (!calls.is_array()) return bad_request("'" + f + "' must be an array", f);
      message["tool_calls"] = nlohmann::ordered_json::array();
      for (const auto& c : calls) {
        if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
            !c["function"]["name"].is_string())
          return bad_request("'" + f + "': each call is {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", f);
        nlohmann::ordered_json args = nlohmann::ordered_json::object();
        if (c["function"].contains("arguments") && c["function"]["arguments"].is_string()) {
          auto parsed = parse_ordered_json(c["function"]["arguments"].get<std::string>(), "a call's arguments");
          if (!parsed.ok()) return bad_request("'" + f + "': " + parsed.error().message, f);
          args = std::move(*parsed);
        } else if (c["function"].contains("arguments")) {
          args = c["function"]["arguments"];
        }
        message["tool_calls"].push_back({{"id", c.value("id", "")}, {"type", "function"},
                                          {"function", {{"name", c["function"]["name"]}, {"arguments", args}}}});
      }
    }
    for (const char* key : {"tool_call_id", "name"})
      if (m.contains(key) && m[key].is_string()) message[key] = m[key];
    r.messages.push_back(std::move(message));
  }
  return {};
}

// tools and tool_choice (chat only).
Check read_tools(const json& j, const nlohmann::ordered_json& ordered, CompletionRequest& r) {
  const bool has_tools = j.contains("tools") && !j["tools"].is_null() && !(j["tools"].is_array() && j["tools"].empty());
  const bool has_choice = j.contains("tool_choice") && !j["tool_choice"].is_null();
  if (!has_tools) {
    if (has_choice && j["tool_choice"] != "none" && j["tool_choice"] != "auto") return bad_request("'tool_choice' needs 'tools'", "tool_choice");
    return {};
  }
  if (!r.chat) return bad_request("'tools' are served on /v1/chat/completions", "tools");
  const json& ts = j["tools"];
  if (!ts.is_array()) return bad_request("'tools' must be an array of functions", "tools");
  r.tools_json = nlohmann::ordered_json::array();
  for (size_t i = 0; i < ts.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const json& t = ts[i];
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object() ||
        !t["function"].contains("name") || !t["function"]["name"].is_string())
      return bad_request("'" + at + "' must be {\"type\": \"function\", \"function\": {\"name\", \"parameters\", ...}}", at);
    Tool tool{t["function"]["name"].get<std::string>(), nullptr};
    for (const auto& other : r.tools)
      if (other.name == tool.name) return bad_request("'" + at + "': the function '" + tool.name + "' is named twice", at);
    r.tools.push_back(tool);
  }
  // The schemas as written (their properties in the body's order), for the grammar.
  r.tools_json = ordered["tools"];
  for (size_t i = 0; i < r.tools.size(); ++i) {
    const auto& f = r.tools_json[i]["function"];
    r.tools[i].parameters = f.contains("parameters") ? f["parameters"] : nlohmann::ordered_json::object();
    if (!r.tools[i].parameters.is_object())
      return bad_request("'tools[" + std::to_string(i) + "].function.parameters' must be a JSON Schema object", "tools");
  }
  if (j.contains("parallel_tool_calls") && !j["parallel_tool_calls"].is_null()) {
    if (!j["parallel_tool_calls"].is_boolean()) return bad_request("'parallel_tool_calls' must be true or false", "parallel_tool_calls");
    r.parallel_tool_calls = j["parallel_tool_calls"].get<bool>();
  }
  if (has_choice) {
    const json& c = j["tool_choice"];
    if (c.is_string()) {
      r.tool_choice = c.get<std::string>();
      if (r.tool_choice != "auto" && r.tool_choice != "none" && r.tool_choice != "required")
        return bad_request("'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\"}}", "tool_choice");
    } else if (c.is_object() && c.contains("function") && c["function"].is_object() && c["function"].contains("name") &&
               c["function"]["name"].is_string()) {
      r.tool_choice = "function";
      r.tool_choice_name = c["function"]["name"].get<std::string>();
      bool known = false;
      for (const auto& t : r.tools) known = known || t.name == r.tool_choice_name;
      if (!known) return bad_request("'tool_choice' names '" + r.tool_choice_name + "', which 'tools' has not", "tool_choice");
    } else {
      return bad_request("'tool_choice' must be auto, none, required or {\"type\": \"function\", \"function\": {\"name\"}}", "tool_choice");
    }
  }
  return {};
}

Check read_prompt(const json& j, CompletionRequest& r) {
  if (!j.contains("prompt")) return bad_request("'prompt' is required", "prompt");
  const json& p = j["prompt"];
  if (p.is_string()) {
    r.prompt = p.get<std::string>();
    return {};
  }
  // Token ids, or a batch of one prompt (["text"], [[ids]]).
  const json& one = p.is_array() && p.size() == 1 && (p[0].is_string() || p[0].is_array()) ? p[0] : p;
  if (one.is_string()) {
    r.prompt = one.get<std::string>();
    return {};
  }
  if (!one.is_array() || one.empty())
    return bad_request("'prompt' must be a string, an array of token ids, or one of them in an array", "prompt");
  if (p.is_array() && p.size() > 1 && !p[0].is_number_integer())
    return bad_request("'prompt': one prompt per request is served here (n = 1)", "prompt");
  for (const auto& t : one) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX)
      return bad_request("'prompt': token ids must be integers >= 0, got " + t.dump(), "prompt");
    r.prompt_ids.push_back(int32_t(t.get<int64_t>()));
  }
  r.prompt_is_ids = true;
  return {};
}

Check read_stop(const json& j, CompletionRequest& r) {
  if (!j.contains("stop") || j["stop"].is_null()) return {};
  const json& s = j["stop"];
  if (s.is_string()) {
    if (!s.get<std::string>().empty()) r.stop.push_back(s.get<std::string>());
    return {};
  }
  if (!s.is_array() || s.size() > 4) return bad_request("'stop' must be a string or an array of up to 4 strings", "stop");
  for (const auto& x : s) {
    if (!x.is_string()) return bad_request("'stop' must be a string or an array of up to 4 strings", "stop");
    if (!x.get<std::string>().empty()) r.stop.push_back(x.get<std::string>());
  }
  return {};
}

Check read_fields(const json& j, CompletionRequest& r) {
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) return bad_request("'model' must be a string", "model");
    r.model = j["model"].get<std::string>();
  }
  if (auto e = r.chat ? read_messages(j, r) : read_prompt(j, r)) return e;
  for (const char* field : {"max_tokens", "max_completion_tokens"}) {
    if (!j.contains(field) || j[field].is_null()) continue;
    const json& v = j[field];
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX))
      return bad_request("'" + std::string(field) + "' must be an integer >= 1, got " + v.dump(), field);
    r.max_tokens = v.get<int64_t>();
  }
  if (auto e = read_number(j, "temperature", 0.0, 2.0, r.temperature)) return e;
  if (auto e = read_number(j, "top_p", 0.0, 1.0, r.top_p)) return e;
  if (r.top_p <= 0.0) return bad_request("'top_p' must be above 0", "top_p");
  if (j.contains("seed") && !j["seed"].is_null()) {
    if (!j["seed"].is_number_integer()) return bad_request("'seed' must be an integer, got " + j["seed"].dump(), "seed");
    r.seed = j["seed"].is_number_unsigned() ? j["seed"].get<uint64_t>() : uint64_t(j["seed"].get<int64_t>());
  }
  if (auto e = read_number(j, "presence_penalty", -2.0, 2.0, r.presence_penalty)) return e;
  if (auto e = read_number(j, "frequency_penalty", -2.0, 2.0, r.frequency_penalty)) return e;
  if (auto e = read_logit_bias(j, r.logit_bias)) return e;
  if (j.contains("n") && !j["n"].is_null() && j["n"] != 1)
    return bad_request("'n' must be 1: one choice per request is served here", "n");
  if (auto e = read_stop(j, r)) return e;
  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) return bad_request("'stream' must be true or false", "stream");
    r.stream = j["stream"].get<bool>();
  }
  if (j.contains("ignore_eos") && !j["ignore_eos"].is_null()) {
    if (!j["ignore_eos"].is_boolean()) return bad_request("'ignore_eos' must be true or false", "ignore_eos");
    r.ignore_eos = j["ignore_eos"].get<bool>();
  }
  if (auto e = read_logprobs(j, r)) return e;
  for (const char* field : {"functions", "function_call", "echo", "best_of", "suffix"}) {
    if (!j.contains(field) || j[field].is_null() || j[field] == false || (j[field].is_array() && j[field].empty())) continue;
    if (std::string(field) == "best_of" && j[field] == 1) continue;
    return bad_request("'" + std::string(field) + "' is not served here", field);
  }
  return {};
}

// response_format: text, a JSON object, or a JSON text valid under a
// schema (its properties in the order the body writes them, so the body
// is read again keeping its order).
Check read_response_format(const json& j, const nlohmann::ordered_json& ordered, CompletionRequest& r) {
  // llama-server's own fields: `grammar` (GBNF text) and `json_schema` (a schema).
  auto given = [&](const char* f) { return j.contains(f) && !j[f].is_null(); };
  if (int(given("response_format")) + int(given("grammar")) + int(given("json_schema")) > 1)
    return bad_request("give one of 'response_format', 'grammar' and 'json_schema'", given("grammar") ? "grammar" : "json_schema");
  if (given("grammar")) {
    if (!j["grammar"].is_string()) return bad_request("'grammar' must be GBNF text", "grammar");
    r.grammar = j["grammar"].get<std::string>();
    r.grammar_field = "grammar";
    return {};
  }
  if (given("json_schema")) {
    auto text = json_schema_gbnf(ordered["json_schema"], "'json_schema'");
    if (!text.ok()) return bad_request(text.error().message, "json_schema");
    r.grammar = *text;
    r.grammar_field = "json_schema";
    return {};
  }
  if (!given("response_format")) return {};
  const json& f = j["response_format"];
  if (!f.is_object() || !f.contains("type") || !f["type"].is_string())
    return bad_request("'response_format' must be an object with a 'type' (text, json_object or json_schema)", "response_format");
  const std::string type = f["type"];
  if (type == "text") return {};
  r.grammar_field = "response_format";
  if (type == "json_object") {
    r.grammar = json_object_gbnf();
    return {};
  }
  if (type != "json_schema")
    return bad_request("'response_format': type '" + type + "' is not text, json_object or json_schema", "response_format");
  if (!f.contains("json_schema") || !f["json_schema"].is_object() || !f["json_schema"].contains("schema"))
    return bad_request("'response_format': json_schema must be an object holding a 'schema'", "response_format");
  auto text = json_schema_gbnf(ordered["response_format"]["json_schema"]["schema"], "'response_format'.json_schema.schema");
  if (!text.ok()) return bad_request(text.error().message, "response_format");
  r.grammar = *text;
  return {};
}

}  // namespace

std::variant<nlohmann::json, ApiError> parse_json_object(const std::string& body) {
  // The core's reader: nesting held to json_depth (everything after walks
  // the value recursively), a key given twice refused rather than one kept.
  auto parsed = parse_json(body, "the request body");
  if (!parsed.ok()) {
    const std::string& why = parsed.error().message;
    const size_t reason = why.find("invalid JSON: ");
    if (reason == std::string::npos) return bad_request(why);  // over json_depth
    return bad_request("the request body is not valid JSON (" + why.substr(reason + 14) + ")");
  }
  json& j = *parsed;
  if (!j.is_object()) return bad_request("the request body must be a JSON object");
  return std::move(j);
}

int64_t prompt_bytes(const CompletionRequest& r) {
  if (!r.chat) return r.prompt_is_ids ? 0 : int64_t(r.prompt.size());  // ids are never tokenized
  int64_t bytes = 0;
  for (const auto& m : r.messages)
    if (auto c = m.find("content"); c != m.end()) bytes += c->is_string() ? int64_t(c->get_ref<const std::string&>().size()) : int64_t(c->dump().size());
  return bytes;
}

std::variant<std::string, ApiError> string_field(const nlohmann::json& j, const char* name, std::string fallback) {
  if (!j.contains(name) || j[name].is_null()) return fallback;
  if (!j[name].is_string()) return bad_request("'" + std::string(name) + "' must be a string, got " + j[name].dump(), name);
  return j[name].get<std::string>();
}

std::variant<CompletionRequest, ApiError> parse_completion_request(const std::string& body, bool chat) {
  auto parsed = parse_json_object(body);
  if (auto* e = std::get_if<ApiError>(&parsed)) return *e;
  CompletionRequest r;
  r.chat = chat;
  if (auto e = read_fields(std::get<json>(parsed), r)) return *e;
  // The body again, keeping its objects' order (a schema's properties in
  // the order written); read once above, so within json_depth.
  auto again = parse_ordered_json(body, "the request body");
  const nlohmann::ordered_json ordered = again.ok() ? std::move(*again) : nlohmann::ordered_json();
  if (auto e = read_tools(std::get<json>(parsed), ordered, r)) return *e;
  if (auto e = read_response_format(std::get<json>(parsed), ordered, r)) return *e;
  return r;
}


}  // namespace arch::serve

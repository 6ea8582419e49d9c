// Tool calls (issue 54): a chat template that takes `tools` renders them;
// tool_choice required (or a named function) holds the reply to a call
// whose arguments validate against the function's schema (checked here, not
// by the grammar), read back as the API's tool_calls; the call and the
// tool's reply carried into the next turn; a reply's text parsed for each
// format the shipped templates write; what cannot be served named.
#include <gtest/gtest.h>

#include "engine/serve/tool_calls.h"
#include "importer/text/chat_template/load.h"
#include "tests/engine/serve/serve_fixture.h"

namespace arch {
namespace {

using json = nlohmann::json;
using testing::RunningServer;

// A template writing calls as <tool_call>{...}</tool_call> (Qwen's, Hermes').
std::string tool_template() {
  static testing::TempDir dir;
  static const std::string path = [] {
    std::string p = dir / "tools.jinja";
    std::ofstream(p) << "{{ bos_token }}{% if tools %}system: tools: {% for t in tools %}{{ t.function.name }} {% endfor %}"
                        "; call one as <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call>\n{% endif %}"
                        "{% for m in messages %}{% if m.role == 'tool' %}tool: {{ m.content }}\n"
                        "{% elif m.tool_calls %}assistant: {% for c in m.tool_calls %}<tool_call>{{ c.function | tojson }}</tool_call>{% endfor %}\n"
                        "{% else %}{{ m.role }}: {{ m.content }}\n{% endif %}{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";
    return p;
  }();
  return path;
}

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "the weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}, "days": {"type": "integer"}},
                  "required": ["city"]}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                  "required": ["zone"]}}}])");

TEST(ServeToolCalls, ARequiredCallRoundTrips) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  serve::ServeOptions o = testing::options(2);
  o.chat_template = tool_template();
  RunningServer s(o);
  auto c = s.client();
  for (const json& choice : {json("required"), json{{"type", "function"}, {"function", {{"name", "get_time"}}}}}) {
    const json req = {{"messages", {{{"role", "user"}, {"content", "What is the weather in Paris?"}}}}, {"max_tokens", 160},
                      {"tools", kTools}, {"tool_choice", choice}, {"temperature", 0.7}, {"seed", 5}};
    const json r = testing::body_of(c.Post("/v1/chat/completions", req.dump(), "application/json"));
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    const json& m = r["choices"][0]["message"];
    if (r["choices"][0]["finish_reason"] == "length") continue;  // cut before the call closed
    ASSERT_EQ(r["choices"][0]["finish_reason"], "tool_calls") << r.dump();
    ASSERT_EQ(m["tool_calls"].size(), 1u) << r.dump();
    EXPECT_TRUE(m["content"].is_null());
    const json& call = m["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    const std::string name = call["function"]["name"];
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    if (choice.is_object()) {
      EXPECT_EQ(name, "get_time");
    }
    if (name == "get_time") {
      EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET") << args.dump();
    } else {
      ASSERT_EQ(name, "get_weather");
      EXPECT_TRUE(args["city"].is_string()) << args.dump();
      if (args.contains("days")) {
        EXPECT_TRUE(args["days"].is_number_integer()) << args.dump();
      }
    }
    // The call and the tool's answer, carried back: the next turn renders them.
    json next = req;
    next.erase("tool_choice");
    next["max_tokens"] = 8;
    next["messages"].push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", m["tool_calls"]}});
    next["messages"].push_back({{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", "sunny, 21 C"}});
    const json after = testing::body_of(c.Post("/v1/chat/completions", next.dump(), "application/json"));
    ASSERT_TRUE(after.contains("choices")) << after.dump();
    EXPECT_GT(after["usage"]["prompt_tokens"].get<int>(), r["usage"]["prompt_tokens"].get<int>());
  }
  // Streamed: the call as one tool_calls delta, then finish_reason tool_calls.
  const json sreq = {{"messages", {{{"role", "user"}, {"content", "Time?"}}}}, {"max_tokens", 160}, {"tools", kTools},
                     {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}, {"stream", true}, {"temperature", 0}};
  auto streamed = c.Post("/v1/chat/completions", sreq.dump(), "application/json");
  ASSERT_TRUE(streamed);
  const auto events = testing::events_of(streamed->body);
  ASSERT_GE(events.size(), 3u) << streamed->body;
  ASSERT_EQ(events[1]["choices"][0]["finish_reason"], "tool_calls") << streamed->body;  // greedy: the call closes within 160 tokens
  const json& d = events[0]["choices"][0]["delta"];
  EXPECT_EQ(d["tool_calls"][0]["function"]["name"], "get_time") << streamed->body;
  EXPECT_EQ(d["tool_calls"][0]["index"], 0);
  EXPECT_EQ(events.back(), "[DONE]");
}

TEST(ServeToolCalls, WhatCannotBeServedIsNamed) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer plain(testing::options(2));  // the fixture's template: no way to write a call
  auto c = plain.client();
  auto post = [&](const json& body, const std::string& path = "/v1/chat/completions") {
    auto r = c.Post(path, body.dump(), "application/json");
    return r ? std::make_pair(r->status, json::parse(r->body, nullptr, false)) : std::make_pair(0, json());
  };
  const json msgs = {{{"role", "user"}, {"content", "hi"}}};
  auto [s1, b1] = post({{"messages", msgs}, {"tools", kTools}});
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(b1["error"]["param"], "tools") << b1.dump();
  auto [s2, b2] = post({{"messages", msgs}, {"tools", kTools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}});
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(b2["error"]["param"], "tool_choice") << b2.dump();
  auto [s3, b3] = post({{"messages", msgs}, {"tools", json::array({{{"type", "function"}}})}});
  EXPECT_EQ(s3, 400);
  EXPECT_EQ(b3["error"]["param"], "tools[0]") << b3.dump();
  auto [s4, b4] = post({{"prompt", "hi"}, {"tools", kTools}}, "/v1/completions");
  EXPECT_EQ(s4, 400);
  EXPECT_EQ(b4["error"]["param"], "tools") << b4.dump();
}

// A reply's text read for calls, in each way templates write them.
TEST(ToolCallText, EachFormatIsReadBack) {
  using serve::parse_tool_calls;
  using serve::ToolFormat;
  auto tagged = parse_tool_calls("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>", ToolFormat::tagged);
  ASSERT_EQ(tagged.calls.size(), 1u);
  EXPECT_EQ(tagged.calls[0].name, "f");
  EXPECT_EQ(json::parse(tagged.calls[0].arguments), json({{"a", 1}}));
  EXPECT_TRUE(tagged.content.empty());
  auto two = parse_tool_calls("Let me look. <tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
                              ToolFormat::tagged);
  ASSERT_EQ(two.calls.size(), 2u);
  EXPECT_EQ(two.content, "Let me look. ");
  auto first = parse_tool_calls("<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"g\", \"arguments\": {}}</tool_call>",
                                ToolFormat::tagged, false);  // parallel_tool_calls: false
  ASSERT_EQ(first.calls.size(), 1u);
  EXPECT_EQ(first.calls[0].name, "f");
  auto mistral = parse_tool_calls("[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": \"y\"}}]", ToolFormat::bracketed);
  ASSERT_EQ(mistral.calls.size(), 1u);
  EXPECT_EQ(json::parse(mistral.calls[0].arguments), json({{"x", "y"}}));
  auto llama = parse_tool_calls("{\"name\": \"f\", \"parameters\": {\"n\": 2}}", ToolFormat::bare);
  ASSERT_EQ(llama.calls.size(), 1u);
  EXPECT_EQ(json::parse(llama.calls[0].arguments), json({{"n", 2}}));
  auto words = parse_tool_calls("No call here {not json", ToolFormat::bare);
  EXPECT_TRUE(words.calls.empty());
  EXPECT_EQ(words.content, "No call here {not json");
  // The shipped tokenizers' templates: Qwen3's takes tools and writes
  // <tool_call>; Llama 3's (the base model's) has no tools and Mistral's
  // tokenizer no template, so those formats are read above only.
  for (const auto& [name, want] : std::vector<std::pair<std::string, ToolFormat>>{{"qwen3", ToolFormat::tagged}}) {
    const std::string dir = testing::shared_dir() + "/tokenizers/" + name;
    ARCH_REQUIRE_SHARED(dir);
    std::ifstream f(dir + "/tokenizer_config.json");
    const json cfg = json::parse(f, nullptr, false);
    const std::string tmpl = cfg.contains("chat_template") && cfg["chat_template"].is_string() ? cfg["chat_template"].get<std::string>() : "";
    const auto got = serve::tool_format(tmpl);
    if (!got) {
      ADD_FAILURE() << name << ": its chat template shows no way to write a call";
      continue;
    }
    EXPECT_EQ(int(*got), int(want)) << name << ": " << serve::tool_format_name(*got);
    // It renders the tools and a call carried back as the model would read them.
    auto info = load_chat_template(dir);
    ASSERT_TRUE(info.ok()) << info.error().message;
    const nlohmann::ordered_json messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}])");
    auto text = info->chat_template.render(info->context(messages, true, nlohmann::ordered_json::parse(kTools.dump())));
    ASSERT_TRUE(text.ok()) << text.error().message;
    EXPECT_NE(text->find("get_time"), std::string::npos) << *text;
    EXPECT_NE(text->find("<tool_call>"), std::string::npos) << *text;
    EXPECT_NE(text->find("\"city\": \"Paris\""), std::string::npos) << *text;
    EXPECT_NE(text->find("sunny"), std::string::npos) << *text;
  }
}

}  // namespace
}  // namespace arch

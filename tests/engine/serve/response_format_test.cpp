// response_format (issue 54): replies held to a JSON Schema or to any JSON
// object, several at once beside unconstrained requests in one batch, each
// judged by parsing it and checking the schema's fields here (not by the
// grammar); an unconstrained request beside them gets what it gets alone; a
// schema that asks for what is not supported is a 400 naming the field.
#include <gtest/gtest.h>

#include <thread>

#include "tests/engine/serve/serve_fixture.h"

namespace arch {
namespace {

using json = nlohmann::json;
using testing::RunningServer;

const json kSchema = json::parse(R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 10},
    "age": {"type": "integer"},
    "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}, "maxItems": 2}},
  "required": ["name", "age"]})");

// This test's own reading of kSchema.
bool fits(const json& v) {
  if (!v.is_object() || !v.contains("name") || !v.contains("age") || !v["name"].is_string() || !v["age"].is_number_integer())
    return false;
  size_t chars = 0;
  for (unsigned char c : v["name"].get<std::string>()) chars += (c & 0xC0) != 0x80;
  if (chars > 10) return false;
  for (auto it = v.begin(); it != v.end(); ++it)
    if (it.key() != "name" && it.key() != "age" && it.key() != "pets") return false;
  if (v.contains("pets")) {
    if (!v["pets"].is_array() || v["pets"].size() > 2) return false;
    for (const auto& p : v["pets"])
      if (p != "cat" && p != "dog") return false;
  }
  return true;
}

TEST(ServeResponseFormat, RepliesValidateBesideUnconstrainedOnes) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(4));
  const json plain_req = {{"prompt", "Once upon a time"}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  auto c = s.client();
  const json alone = testing::body_of(c.Post("/v1/completions", plain_req.dump(), "application/json"));
  ASSERT_TRUE(alone.contains("choices")) << alone.dump();
  std::vector<json> replies(8);
  json beside;
  std::vector<std::thread> clients;
  for (int k = 0; k < 8; ++k)
    clients.emplace_back([&, k] {
      json req = {{"prompt", "Once upon a time"}, {"max_tokens", 160}, {"temperature", 0.3 + 0.2 * (k % 4)}, {"seed", k + 1}};
      req["response_format"] = k % 4 == 3 ? json{{"type", "json_object"}}
                                          : json{{"type", "json_schema"}, {"json_schema", {{"name", "person"}, {"schema", kSchema}}}};
      auto cl = s.client();
      replies[size_t(k)] = testing::body_of(cl.Post("/v1/completions", req.dump(), "application/json"));
    });
  clients.emplace_back([&] {
    auto cl = s.client();
    beside = testing::body_of(cl.Post("/v1/completions", plain_req.dump(), "application/json"));
  });
  for (auto& t : clients) t.join();
  EXPECT_EQ(beside["choices"][0]["tokens"], alone["choices"][0]["tokens"]);  // the batch's other rows leave it alone
  int whole = 0;
  for (size_t k = 0; k < replies.size(); ++k) {
    const json& r = replies[k];
    ASSERT_TRUE(r.contains("choices")) << r.dump();
    if (r["choices"][0]["finish_reason"] != "stop") continue;  // cut by max_tokens: not whole, as finish_reason says
    ++whole;
    const json v = json::parse(r["choices"][0]["text"].get<std::string>(), nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << r.dump();
    if (k % 4 == 3) EXPECT_TRUE(v.is_object()) << r.dump();
    else EXPECT_TRUE(fits(v)) << r.dump();
  }
  EXPECT_GE(whole, 6);
}

// llama-server's own fields: `grammar` (GBNF text) and `json_schema`.
TEST(ServeResponseFormat, LlamaServersGrammarAndJsonSchemaFields) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2));
  auto c = s.client();
  const json yes_no = testing::body_of(c.Post("/v1/completions",
      json{{"prompt", "Is the sky blue?"}, {"max_tokens", 8}, {"grammar", "root ::= \" \"? (\"yes\" | \"no\")"}}.dump(), "application/json"));
  ASSERT_TRUE(yes_no.contains("choices")) << yes_no.dump();
  const std::string text = yes_no["choices"][0]["text"];
  EXPECT_TRUE(text == "yes" || text == "no" || text == " yes" || text == " no") << text;
  const json num = testing::body_of(c.Post("/v1/completions",
      json{{"prompt", "Once"}, {"max_tokens", 40}, {"json_schema", {{"type", "integer"}}}}.dump(), "application/json"));
  ASSERT_TRUE(num.contains("choices")) << num.dump();
  if (num["choices"][0]["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(num["choices"][0]["text"].get<std::string>()).is_number_integer()) << num.dump();
  }
  auto bad = c.Post("/v1/completions", json{{"prompt", "Once"}, {"grammar", "root ::= missing"}}.dump(), "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "grammar") << bad->body;
  auto both = c.Post("/v1/completions", json{{"prompt", "Once"}, {"grammar", "root ::= \"a\""}, {"response_format", {{"type", "json_object"}}}}.dump(),
                     "application/json");
  ASSERT_TRUE(both);
  EXPECT_EQ(both->status, 400) << both->body;
}

TEST(ServeResponseFormat, WhatItCannotHonourIsA400NamingTheField) {
  ARCH_REQUIRE_SHARED(testing::stories_dir());
  RunningServer s(testing::options(2));
  auto c = s.client();
  for (const json& format : {json{{"type", "json_schema"}, {"json_schema", {{"schema", {{"type", "string"}, {"format", "date"}}}}}},
                             json{{"type", "yaml"}}, json{{"type", "json_schema"}}, json("json")}) {
    const json req = {{"prompt", "Once"}, {"max_tokens", 8}, {"response_format", format}};
    auto r = c.Post("/v1/completions", req.dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    const json b = json::parse(r->body, nullptr, false);
    EXPECT_EQ(b["error"]["param"], "response_format") << r->body;
  }
}

}  // namespace
}  // namespace arch

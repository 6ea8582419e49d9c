// Constrained decoding (issue 54): GBNF read into rules (its faults named),
// the matcher following text through them, JSON Schema written as a
// grammar (what it cannot honour refused by name), each token's bytes, and
// replies drawn under a schema on stories260K over many seeds and
// temperatures, each judged by a validator of this test's own (not by the
// grammar).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "engine/runtime/generate.h"
#include "engine/runtime/grammar_constraint.h"
#include "engine/runtime/json_schema_grammar.h"
#include "engine/runtime/model.h"
#include "importer/text/token_bytes.h"
#include "tests/shared_data.h"

namespace arch {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> grammar(const std::string& text) {
  auto g = parse_gbnf(text, "test.gbnf");
  EXPECT_TRUE(g.ok()) << g.error().message;
  return g.ok() ? std::make_shared<const Grammar>(std::move(*g)) : nullptr;
}

// Whether the whole of `text` is a sentence of g.
bool sentence(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.accept(text) && m.complete();
}

TEST(Gbnf, FaultsAreNamedWithTheirLine) {
  auto fault = [](const std::string& text) {
    auto g = parse_gbnf(text, "g.gbnf");
    return g.ok() ? std::string("(read)") : g.error().message;
  };
  EXPECT_NE(fault("root ::= item\n").find("g.gbnf:1: rule 'item' is used but not defined"), std::string::npos) << fault("root ::= item\n");
  EXPECT_NE(fault("start ::= \"a\"\n").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(fault("root ::= \"a\n").find("g.gbnf:1:"), std::string::npos);
  EXPECT_NE(fault("root ::= x\nx ::= x \"a\" | \"b\"\n").find("'x' is left-recursive"), std::string::npos) << fault("root ::= x\nx ::= x \"a\" | \"b\"\n");
  EXPECT_NE(fault("root ::= \"a\"{5,2}\n").find("n < m"), std::string::npos);
  EXPECT_NE(fault("root ::= [z-a]\n").find("runs backwards"), std::string::npos);
  EXPECT_NE(fault("root ::= \"a\"\nroot ::= \"b\"\n").find("defined twice"), std::string::npos);
  // Counts multiply what is written out: bounded.
  std::string wide = "root ::=";
  for (int k = 0; k < 5000; ++k) wide += " [a]{1000}";
  EXPECT_NE(fault(wide + "\n").find("past 4194304"), std::string::npos);
}

TEST(Gbnf, TheMatcherTakesWhatTheGrammarSays) {
  auto g = grammar(
      "root ::= greeting (\",\" ws name)? \"!\"\n"
      "greeting ::= \"hi\" | \"hello\"   # two words\n"
      "name ::= [A-Z] [a-z]{1,4}\n"
      "ws ::= \" \"*\n");
  ASSERT_TRUE(g);
  EXPECT_TRUE(sentence(g, "hi!"));
  EXPECT_TRUE(sentence(g, "hello,   Ann!"));
  EXPECT_TRUE(sentence(g, "hi,Bobby!"));
  EXPECT_FALSE(sentence(g, "hi, Bobbyy!"));  // 5 lower-case letters
  EXPECT_FALSE(sentence(g, "hi, a!"));
  EXPECT_FALSE(sentence(g, "hi"));           // not whole yet
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accept("hey"));
  // Negated classes and code points past ASCII, read byte by byte.
  auto u = grammar("root ::= [^a-z]+ \"\\u00e9\"\n");
  ASSERT_TRUE(u);
  EXPECT_TRUE(sentence(u, "ÄÖ\xc3\xa9"));
  EXPECT_FALSE(sentence(u, "ab\xc3\xa9"));
  GrammarMatcher half(u);
  EXPECT_TRUE(half.accept("\xc3"));   // the first byte of é (or Ä, Ö)
  EXPECT_FALSE(half.complete());
  EXPECT_FALSE(GrammarMatcher(u).accept("\xc0\x80"));  // an overlong NUL is not UTF-8
  // A repetition does not deepen the state: inside a string, every
  // character leaves the same state (so a step's mask is found once).
  auto j = grammar(json_object_gbnf());
  ASSERT_TRUE(j);
  GrammarMatcher a(j);
  const auto one = a.advanced(a.state(), "{\"name\": \"A");
  const auto many = a.advanced(a.state(), "{\"name\": \"Alice and Bob went out to play");
  ASSERT_FALSE(one.dead());
  EXPECT_EQ(one.stacks, many.stacks);
}

TEST(JsonSchemaGrammar, ItsSentencesAreTheValidTexts) {
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 5},
      "age": {"type": "integer"},
      "pets": {"type": "array", "items": {"enum": ["cat", "dog"]}, "minItems": 1, "maxItems": 2},
      "kind": {"const": "person"},
      "next": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/point"}]}
    },
    "required": ["name", "age"],
    "$defs": {"point": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
  })");
  auto text = json_schema_gbnf(schema, "schema.json");
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto g = grammar(*text);
  ASSERT_TRUE(g);
  EXPECT_TRUE(sentence(g, R"({"name": "Ann", "age": 7})"));
  EXPECT_TRUE(sentence(g, R"({"name":"Bo","age":-3,"pets":["cat","dog"],"kind":"person","next":{"x": 1.5e3}})"));
  EXPECT_TRUE(sentence(g, R"({"name":"Bo","age":0,"next":null})"));
  EXPECT_FALSE(sentence(g, R"({"age": 7})"));                                   // name is required
  EXPECT_FALSE(sentence(g, R"({"name": "Annabel", "age": 7})"));                // longer than 5
  EXPECT_FALSE(sentence(g, R"({"name": "Ann", "age": 7.5})"));                  // not an integer
  EXPECT_FALSE(sentence(g, R"({"name": "Ann", "age": 7, "pets": []})"));        // fewer than 1
  EXPECT_FALSE(sentence(g, R"({"name": "Ann", "age": 7, "pets": ["cat","cat","dog"]})"));
  EXPECT_FALSE(sentence(g, R"({"name": "Ann", "age": 7, "pets": ["cow"]})"));
  EXPECT_FALSE(sentence(g, R"({"name": "Ann", "age": 7, "kind": "robot"})"));
  EXPECT_FALSE(sentence(g, R"({"name": "Ann", "age": 7, "next": {"y": 1}})"));
  // A recursive definition is a rule that names itself.
  auto tree = json_schema_gbnf(json::parse(R"({"$ref": "#/$defs/t", "$defs": {"t": {"type": "object",
      "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}}})"), "tree.json");
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  auto t = grammar(*tree);
  ASSERT_TRUE(t);
  EXPECT_TRUE(sentence(t, R"({"kids": [{"kids": []}, {}]})"));
}

// pattern: a regular expression over the value, unanchored unless ^ and $
// say so, the value written as JSON writes it.
TEST(JsonSchemaGrammar, APatternHoldsTheStringsValue) {
  auto g_of = [](const std::string& pattern) {
    auto text = json_schema_gbnf(json{{"type", "string"}, {"pattern", pattern}}, "p.json");
    EXPECT_TRUE(text.ok()) << pattern << ": " << text.error().message;
    return text.ok() ? grammar(*text) : nullptr;
  };
  auto date = g_of("^\\d{4}-\\d{2}-\\d{2}$");
  ASSERT_TRUE(date);
  EXPECT_TRUE(sentence(date, R"("2026-12-06")"));
  EXPECT_FALSE(sentence(date, R"("2026-1-06")"));
  EXPECT_FALSE(sentence(date, R"(" 2026-12-06")"));
  auto code = g_of("^(ab|c[xyz]?)+(-[A-Z]{1,2})?$");
  ASSERT_TRUE(code);
  EXPECT_TRUE(sentence(code, R"("abcxc-QR")"));
  EXPECT_TRUE(sentence(code, R"("ab")"));
  EXPECT_FALSE(sentence(code, R"("a")"));
  EXPECT_FALSE(sentence(code, R"("ab-QRS")"));
  auto inside = g_of("cat");  // unanchored: anywhere in the value
  ASSERT_TRUE(inside);
  EXPECT_TRUE(sentence(inside, R"("a cat sat")"));
  EXPECT_FALSE(sentence(inside, R"("a dog")"));
  auto quoted = g_of("^say \"hi\\\\\"$");  // the value: say "hi\"
  ASSERT_TRUE(quoted);
  EXPECT_TRUE(sentence(quoted, R"("say \"hi\\\"")"));
  EXPECT_FALSE(sentence(quoted, R"("say "hi\"")"));
  for (const auto& [pattern, word] : std::vector<std::pair<std::string, std::string>>{
           {"(a)\\1", "back-references"}, {"a(?=b)", "lookaround"}, {"a^b", "^ and $ only"}, {"[a", "not closed"}}) {
    auto r = json_schema_gbnf(json{{"type", "string"}, {"pattern", pattern}}, "p.json");
    ASSERT_FALSE(r.ok()) << pattern;
    EXPECT_NE(r.error().message.find(word), std::string::npos) << r.error().message;
  }
}

TEST(JsonSchemaGrammar, WhatItCannotHonourIsRefusedByName) {
  for (const auto& [schema, word] : std::vector<std::pair<std::string, std::string>>{
           {R"({"type": "string", "pattern": "^a+$", "maxLength": 3})", "'pattern' beside minLength or maxLength"},
           {R"({"type": "string", "format": "date"})", "'format' is not supported"},
           {R"({"type": "integer", "minimum": 3})", "'minimum' is not supported"},
           {R"({"oneOf": [{"type": "string"}]})", "'oneOf' is not supported"},
           {R"({"type": "object", "properties": {"a": {"type": "thing"}}})", "#/properties/a: type 'thing'"},
           {R"({"$ref": "#/$defs/none"})", "names no definition"},
           {R"({"$ref": "other.json#/x"})", "only #/$defs/NAME"},
           {R"({"type": "array", "minItems": 3, "maxItems": 2})", "maxItems is less than minItems"},
           {R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})", "'required' names 'b'"},
           {R"(false)", "admits no value"}}) {
    auto r = json_schema_gbnf(json::parse(schema), "s.json");
    ASSERT_FALSE(r.ok()) << schema;
    EXPECT_NE(r.error().message.find(word), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find("s.json: #"), std::string::npos) << r.error().message;
  }
}

// What each token adds to decoded text, joined, is the decoded text.
TEST(TokenBytes, JoinedTheyAreTheDecodedText) {
  for (const char* name : {"qwen3", "gpt2", "llama2"}) {
    const std::string dir = testing::shared_dir() + "/tokenizers/" + name;
    ARCH_REQUIRE_SHARED(dir);
    auto tok = load_tokenizer(dir);
    ASSERT_TRUE(tok.ok()) << tok.error().message;
    const auto bytes = token_bytes(**tok);
    ASSERT_EQ(bytes.size(), (*tok)->vocab_size());
    for (const std::string text : {"Hello, world! {\"a\": [1, 2.5e3]}", "naïve café — 日本語 🙂", "  two  spaces\n\tand a tab"}) {
      const auto ids = (*tok)->encode(text, false);
      std::string joined;
      for (int32_t id : ids) joined += bytes[size_t(id)];
      const std::string decoded = (*tok)->decode(ids);
      // SentencePiece's decode drops the text's first space, which its first token holds.
      EXPECT_TRUE(joined == decoded || joined == " " + decoded) << name << ": [" << joined << "] vs [" << decoded << "]";
    }
    for (int32_t id : (*tok)->special_ids()) EXPECT_TRUE(bytes[size_t(id)].empty()) << name << " " << id;
  }
}

// A validator of this test's own: the keywords the schemas below use.
bool valid(const json& v, const json& s, const json& root) {
  if (s.contains("$ref")) return valid(v, root["$defs"][s["$ref"].get<std::string>().substr(8)], root);
  if (s.contains("const")) return v == s["const"];
  if (s.contains("enum")) return std::find(s["enum"].begin(), s["enum"].end(), v) != s["enum"].end();
  if (s.contains("anyOf")) {
    for (const auto& a : s["anyOf"])
      if (valid(v, a, root)) return true;
    return false;
  }
  if (!s.contains("type")) return true;
  const std::string t = s["type"];
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "integer") return v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  if (t == "number") return v.is_number();
  if (t == "string") {
    if (!v.is_string()) return false;
    // Code points, not bytes.
    size_t n = 0;
    for (unsigned char c : v.get<std::string>()) n += (c & 0xC0) != 0x80;
    return n >= s.value("minLength", size_t(0)) && n <= s.value("maxLength", size_t(1) << 30);
  }
  if (t == "array") {
    if (!v.is_array() || v.size() < s.value("minItems", size_t(0)) || v.size() > s.value("maxItems", size_t(1) << 30)) return false;
    for (const auto& e : v)
      if (s.contains("items") && !valid(e, s["items"], root)) return false;
    return true;
  }
  if (t == "object") {
    if (!v.is_object()) return false;
    for (const auto& r : s.value("required", json::array()))
      if (!v.contains(r.get<std::string>())) return false;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!s.contains("properties")) continue;
      if (!s["properties"].contains(it.key())) return false;
      if (!valid(it.value(), s["properties"][it.key()], root)) return false;
    }
    return true;
  }
  return false;
}

TEST(ConstrainedDecoding, EveryReplyValidatesAgainstItsSchema) {
  const std::string dir = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir, LoadOptions{});
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto tok = load_tokenizer(dir);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const json schema = json::parse(R"({
    "type": "object",
    "properties": {
      "name": {"type": "string", "maxLength": 10},
      "age": {"type": "integer"},
      "happy": {"type": "boolean"},
      "pets": {"type": "array", "items": {"enum": ["cat", "dog", "bird"]}, "maxItems": 3},
      "home": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/place"}]}
    },
    "required": ["name", "age", "happy"],
    "$defs": {"place": {"type": "object", "properties": {"town": {"type": "string", "maxLength": 8}}, "required": ["town"]}}
  })");
  auto text = json_schema_gbnf(schema, "schema");
  ASSERT_TRUE(text.ok()) << text.error().message;
  auto g = grammar(*text);
  ASSERT_TRUE(g);
  auto vocab = std::make_shared<const GrammarVocab>(token_bytes(**tok));
  const auto eos = eos_ids(**m, tok->get());
  ASSERT_FALSE(eos.empty());
  const auto prompt = (*tok)->encode("Once upon a time, Lily", true);
  int whole = 0;
  for (float temperature : {0.0f, 0.7f, 1.0f, 1.5f})
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      if (temperature == 0.0f && seed > 1) break;
      GrammarConstraint c(g, vocab, eos);
      GenerateOptions o;
      o.max_new_tokens = 200;
      o.sampling.greedy = temperature == 0.0f;
      o.sampling.temperature = temperature > 0 ? temperature : 1.0f;
      o.sampling.seed = seed;
      o.stop_ids = eos;
      o.process_logits = [&](std::span<float> logits, const std::vector<int32_t>& so_far) { c.mask(logits, so_far); };
      auto r = generate(**m, prompt, o);
      ASSERT_TRUE(r.ok()) << r.error().message;
      const std::string reply = (*tok)->decode(r->tokens, true);
      SCOPED_TRACE("temperature " + std::to_string(temperature) + " seed " + std::to_string(seed) + ": " + reply);
      if (r->stop_reason != "eos") continue;  // cut by length: not whole, as the API's finish_reason "length" says
      ++whole;
      const auto v = json::parse(reply, nullptr, false);
      ASSERT_FALSE(v.is_discarded());
      EXPECT_TRUE(valid(v, schema, schema));
    }
  EXPECT_GE(whole, 15);  // most replies end within 200 tokens
}

}  // namespace
}  // namespace arch

#include "engine/core/json_text.h"

#include <gtest/gtest.h>

#include "tests/test_files.h"

namespace arch {
namespace {

TEST(ParseJson, ParsesValidText) {
  auto j = parse_json(R"({"a": [1, 2], "b": {"c": null}})", "x.json");
  ASSERT_TRUE(j.ok()) << j.error().message;
  EXPECT_EQ((*j)["a"][1], 2);
  EXPECT_TRUE((*j)["b"]["c"].is_null());
}

TEST(ParseJson, ErrorPointsAtLineAndColumn) {
  auto j = parse_json("{\n  \"a\": 1,\n  \"b\": tru\n}", "cfg.json");
  ASSERT_FALSE(j.ok());
  EXPECT_CONTAINS(j.error().message, "cfg.json:3:");
  EXPECT_CONTAINS(j.error().message, "invalid JSON: syntax error");
  EXPECT_EQ(j.error().message.find("[json.exception"), std::string::npos) << j.error().message;
}

TEST(ParseJson, EmptyTextIsAnError) {
  auto j = parse_json("", "empty.json");
  ASSERT_FALSE(j.ok());
  EXPECT_CONTAINS(j.error().message, "empty.json:1:1: invalid JSON");
}

TEST(ParseJson, DuplicateKeysAreAnErrorAtAnyDepth) {
  auto top = parse_json(R"({"a": 1, "a": 2})", "t.json");
  ASSERT_FALSE(top.ok());
  EXPECT_CONTAINS(top.error().message, "t.json: invalid JSON: duplicate key 'a'");
  auto nested = parse_json(R"({"x": {"k": 1}, "y": [{"k": 1, "k": 2}]})", "n.json");
  ASSERT_FALSE(nested.ok());
  EXPECT_CONTAINS(nested.error().message, "duplicate key 'k'");
  // The same key in sibling objects is fine.
  EXPECT_TRUE(parse_json(R"({"x": {"k": 1}, "y": {"k": 2}})", "s.json").ok());
}

// What reads a JSON value after it recurses: past json_depth it is refused.
TEST(ParseJson, DeepNestingIsRefusedByItsLimit) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto j = parse_json(deep, "deep.json");
  ASSERT_FALSE(j.ok());
  EXPECT_CONTAINS(j.error().message, "deep.json: the nesting of its arrays and objects (513) exceeds the limit 'json_depth' (512)");
  std::string ok = std::string(512, '[') + std::string(512, ']');
  EXPECT_TRUE(parse_json(ok, "ok.json").ok());
  std::string objects;
  for (int i = 0; i < 600; ++i) objects += "{\"a\":";
  objects += "1" + std::string(600, '}');
  EXPECT_FALSE(parse_json(objects, "o.json").ok());
}

TEST(JsonTypeName, DistinguishesIntegersFromNumbers) {
  EXPECT_EQ(json_type_name(nlohmann::json(3)), "integer");
  EXPECT_EQ(json_type_name(nlohmann::json(3.5)), "number");
  EXPECT_EQ(json_type_name(nlohmann::json("s")), "string");
  EXPECT_EQ(json_type_name(nlohmann::json::array()), "array");
}

}  // namespace
}  // namespace arch

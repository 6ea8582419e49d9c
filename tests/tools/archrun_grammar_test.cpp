// archrun generate --json-schema / --grammar (issue 54): the reply a JSON
// text the test checks against the schema itself; a schema asking for what
// cannot be honoured, or a grammar on an encoder-decoder, refused by name
// with a non-zero exit.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/golden/golden_case.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

using testing::run_tool;

TEST(ArchrunGrammar, TheReplyIsWhatTheSchemaAndGrammarSay) {
  const std::string model = testing::shared_dir() + "/models/stories260K";
  ARCH_REQUIRE_SHARED(model);
  testing::TempDir dir;
  testing::write_file(dir / "s.json", R"({"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
      "age": {"type": "integer"}}, "required": ["name", "age"]})");
  testing::write_file(dir / "g.gbnf", "root ::= \" \"? (\"yes\" | \"no\") \".\"\n");
  auto r = run_tool(testing::archrun() + " generate " + model + " -p 'Once upon a time' -n 120 --json --json-schema " + (dir / "s.json"));
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(testing::last_line(r.out));
  const auto v = nlohmann::json::parse(j["text"].get<std::string>(), nullptr, false);
  ASSERT_FALSE(v.is_discarded()) << j.dump();
  EXPECT_TRUE(v["name"].is_string() && v["name"].get<std::string>().size() <= 8 && v["age"].is_number_integer()) << v.dump();
  auto g = run_tool(testing::archrun() + " generate " + model + " -p 'Once' -n 8 --json --grammar " + (dir / "g.gbnf"));
  ASSERT_EQ(g.exit_code, 0) << g.out;
  const std::string text = nlohmann::json::parse(testing::last_line(g.out))["text"];
  EXPECT_TRUE(text == "yes." || text == "no." || text == " yes." || text == " no.") << text;

  testing::write_file(dir / "bad.json", R"({"type": "string", "format": "email"})");
  auto bad = run_tool(testing::archrun() + " generate " + model + " -p 'Once' --json-schema " + (dir / "bad.json"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("'format' is not supported"), std::string::npos) << bad.out;
  const std::string t5 = testing::golden_dir("t5");
  ARCH_REQUIRE_SHARED(t5);
  auto enc = run_tool(testing::archrun() + " generate " + t5 + " --ids 1,2 --json-schema " + (dir / "s.json"));
  EXPECT_NE(enc.exit_code, 0);
  EXPECT_NE(enc.out.find("is an encoder-decoder"), std::string::npos) << enc.out;
}

}  // namespace
}  // namespace arch

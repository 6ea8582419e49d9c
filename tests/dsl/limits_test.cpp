// Hostile templates and configs: nesting that would overflow the stack,
// numbers that do not fit, loops that would unroll without end. Each is a
// clear error naming the limit or the fault, found before the work.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/core/limits.h"
#include "dsl/instantiate.h"
#include "kernels/kernels.h"
#include "tests/dsl/dsl_test_util.h"
#include "tests/time_bound.h"

namespace arch::dsl {
namespace {

using nlohmann::json;
using testing::first_line;
using testing::parse_error;
using testing::parse_ok;

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

std::string with_config_default(const std::string& expr) {
  return "family T\nconfig {\n  n: int = " + expr + "\n}\ngraph step(x: f32[seq]) { output y = x }\n";
}

TEST(TemplateLimits, DeepBracketsAreRefusedNotOverflowed) {
  const std::string deep = with_config_default(repeat("(", 20000) + "1" + repeat(")", 20000));
  const std::string msg = first_line(parse_error(deep));
  EXPECT_NE(msg.find("exceeds the limit 'template_depth' (200)"), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("t.arch:3:", 0), 0u) << msg;  // where the nesting went past it
}

TEST(TemplateLimits, DeepNegationsAndBodies) {
  EXPECT_NE(parse_error(with_config_default(repeat("-", 20000) + "1")).find("'template_depth'"), std::string::npos);
  EXPECT_NE(parse_error(with_config_default(repeat("not ", 20000) + "true")).find("'template_depth'"),
            std::string::npos);
  const std::string ifs = "family T\ngraph step(x: f32[seq]) {\n" + repeat("if true {\n", 5000) + "output y = x\n" +
                          repeat("}\n", 5000) + "}\n";
  EXPECT_NE(parse_error(ifs).find("'template_depth'"), std::string::npos);
}

TEST(TemplateLimits, AMegabyteLineOfOperators) {
  const std::string line = with_config_default("1" + repeat(" + 1", 250000));
  const std::string msg = first_line(parse_error(line));
  EXPECT_NE(msg.find("operators in one chain (250000) exceeds the limit 'template_depth'"), std::string::npos) << msg;
}

TEST(TemplateLimits, NestingWithinTheLimitParses) {
  parse_ok(with_config_default(repeat("(", 150) + "1" + repeat(")", 150)));
  parse_ok(with_config_default("1" + repeat(" + 1", 150)));
}

TEST(TemplateLimits, NumbersThatDoNotFit) {
  EXPECT_NE(parse_error(with_config_default("1" + std::string(400, '0'))).find("is too large for an int"),
            std::string::npos);
  EXPECT_NE(parse_error(with_config_default("1e999")).find("the number 1e999 is too large"), std::string::npos);
  const std::string idx = "family T\nweights {\n  a.99999999999999999999999.w: [2]\n}\ngraph step(x: f32[seq]) { output y = x }\n";
  EXPECT_NE(parse_error(idx).find("the index 99999999999999999999999 is too large"), std::string::npos);
}

TEST(TemplateLimits, ATemplateFileOverItsSize) {
  ASSERT_TRUE(set_limit("template_bytes", 50).ok());
  const std::string msg = parse_error(with_config_default("1 + 1"));
  ASSERT_TRUE(set_limit("template_bytes", 16 << 20).ok());
  EXPECT_NE(msg.find("exceeds the limit 'template_bytes' (50)"), std::string::npos) << msg;
}

Result<Instance> instantiate_text(const std::string& src, json config) {
  InstantiateOptions opt;
  opt.config = std::move(config);
  return instantiate(parse_ok(src), opt, op_table());
}

const char* kLayers = R"(family T
config {
  num_hidden_layers: int
}
graph step(x: f32[seq]) {
  h = x
  for i in 0..num_hidden_layers {
    h = h * 2.0
  }
  output y = h
}
)";

TEST(TemplateLimits, ABillionLayersIsRefusedBeforeUnrolling) {
  const auto start = std::chrono::steady_clock::now();
  auto r = instantiate_text(kLayers, {{"num_hidden_layers", 1000000000}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(first_line(r.error().message),
            "t.arch:7:15: error: the template's loop iterations (1000000000) exceeds the limit 'loop_iterations' "
            "(65536); if this is meant, raise it with --limit loop_iterations=N or ARCHETYPE_LIMITS=loop_iterations=N");
  EXPECT_LT(seconds, arch::testing::time_bound(1.0));
}

TEST(TemplateLimits, NegativeAndHugeCountsFromTheConfig) {
  auto negative = instantiate_text(kLayers, {{"num_hidden_layers", -2}});
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(first_line(negative.error().message),
            "t.arch:7:15: error: the loop range 0 .. -2 runs backwards (a count in config.json is negative?)");
  auto huge = instantiate_text(kLayers, {{"num_hidden_layers", 1e30}});
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(first_line(huge.error().message),
            "t.arch:3:3: error: config.json gives 'num_hidden_layers' as float 1e+30, the template declares int");
  EXPECT_TRUE(instantiate_text(kLayers, {{"num_hidden_layers", 3}}).ok());
}

TEST(TemplateLimits, NestedLoopsCountTogether) {
  const char* nested = R"(family T
graph step(x: f32[seq]) {
  for i in 0..1000 {
    for j in 0..1000 {
    }
  }
  output y = x
}
)";
  auto r = instantiate_text(nested, json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceeds the limit 'loop_iterations'"), std::string::npos) << r.error().message;
}

TEST(TemplateLimits, IntegerOverflowIsAnError) {
  auto r = instantiate_text(with_config_default("4503599627370496 * 4096"), json::object());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(first_line(r.error().message),
            "t.arch:3:29: error: integer overflow in int 4503599627370496 * int 4096");
}

TEST(TemplateLimits, GraphNodes) {
  ASSERT_TRUE(set_limit("graph_nodes", 10).ok());
  auto r = instantiate_text(kLayers, {{"num_hidden_layers", 50}});
  ASSERT_TRUE(set_limit("graph_nodes", 4000000).ok());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceeds the limit 'graph_nodes' (10)"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace arch::dsl

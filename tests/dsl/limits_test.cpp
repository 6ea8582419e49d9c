// Hostile templates and configs: nesting that would overflow the stack,
// numbers that do not fit, loops that would unroll without end. Each is a
// clear error naming the limit or the fault, found before the work.
#include <gtest/gtest.h>

#include <chrono>

#include "engine/core/limits.h"
#include "dsl/instantiate.h"
#include "kernels/kernels.h"
#include "tests/dsl/dsl_test_util.h"
#include "tests/test_files.h"
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

// f0.arch imports f1.arch imports f2.arch ... 5000 deep: each import is a
// level of recursion in the loader and the parser, bounded like any other
// nesting, and refused at the import that goes too deep.
TEST(TemplateLimits, AnImportChainThousandsDeepIsRefusedNotOverflowed) {
  arch::testing::TempDir dir;
  const int files = 5000;
  auto name = [](int k) { return "f" + std::to_string(k) + ".arch"; };
  for (int k = 0; k < files; ++k)
    arch::testing::write_file(dir / name(k), "family T\nimport \"" + name(k + 1) + "\"\n");
  arch::testing::write_file(dir / name(files), "family T\ngraph step(x: f32[seq]) { output y = x }\n");
  auto deep = parse_template_file(dir / name(0));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(first_line(deep.error().message),
            dir / name(200) +
                ":2:8: error: the nesting of imports (201) exceeds the limit 'template_depth' (200); if this is "
                "meant, raise it with --limit template_depth=N or ARCHETYPE_LIMITS=template_depth=N");
  // A chain within the limit reads to its end.
  auto shallow = parse_template_file(dir / name(files - 50));
  ASSERT_TRUE(shallow.ok()) << shallow.error().message;
  EXPECT_EQ(shallow->files.size(), 51u);
  ASSERT_EQ(shallow->graphs.size(), 1u);
  EXPECT_EQ(shallow->graphs[0].name, "step");
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

// A loop without a scope names its values again each iteration: a, a#2,
// a#3, ... Each name is found in time independent of how many came before,
// so thousands of iterations instantiate in well under a second.
std::string unrolled(int iterations) {
  return "family T\ngraph step(x: f32[seq, 4]) {\n  h = x\n  for i in 0.." + std::to_string(iterations) +
         " {\n    a = h * 2.0\n    b = a + h\n    h = b - a\n  }\n  output y = h\n}\n";
}

double seconds_to_instantiate(int iterations, Result<Instance>& out) {
  const auto start = std::chrono::steady_clock::now();
  out = instantiate_text(unrolled(iterations), json::object());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(TemplateLimits, NamingValuesInALongLoopIsNotQuadratic) {
  Result<Instance> r = error("not run");
  const double seconds = seconds_to_instantiate(4000, r);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_LT(seconds, arch::testing::time_bound(1.0));
  const Graph& g = r->graph;
  ASSERT_EQ(g.nodes.size(), 4000u * 4);  // constant, mul, add, sub
  auto named = [&](const std::string& n) { return g.find_value(n) >= 0; };
  for (const char* n : {"a", "a.constant", "b", "h", "a#2", "a.constant#2", "b#2", "h#2", "a#4000", "a.constant#4000",
                        "b#4000", "h#4000"})
    EXPECT_TRUE(named(n)) << n;
  EXPECT_FALSE(named("a#4001"));
  EXPECT_EQ(g.values[size_t(g.outputs.at(0).value)].name, "h#4000");
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

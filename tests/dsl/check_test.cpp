// check_template: the lint that runs without a config. Reports every
// problem it finds, each at its line and column.
#include "dsl/check.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "dsl/parse.h"
#include "kernels/kernels.h"
#include "tests/dsl/dsl_test_util.h"

namespace arch::dsl {
namespace {

using testing::first_line;
using testing::parse_ok;

// The first line of every diagnostic check_template reports.
std::vector<std::string> check(const std::string& src) {
  Template t = parse_ok(src);
  std::vector<std::string> out;
  for (const Error& e : check_template(t, op_table())) out.push_back(first_line(e.message));
  return out;
}

using Lines = std::vector<std::string>;

// Line numbers matter: line 1 is `family T`.
const char* kMistakes = R"(family T
config {
  hidden: int
  hidden: int
  eps: float = 1e-5
}
weights {
  model.norm.weight: [hidden]
  model.layers.{i}.w.weight: [hidden, hidden]
}
graph step(x: f32[seq, 4]) {
  a = rms_nrom(x, model.norm.weight, eps: eps)
  b = rms_norm(x, model.norm.weight, x, eps: eps)
  c = rms_norm(x, epz: eps)
  d = x + hiden
  e = x @ model.norm.wieght^T
  return e
}
)";

TEST(Check, ReportsEveryMistakeWithLineAndColumn) {
  EXPECT_EQ(check(kMistakes),
            (Lines{
                "t.arch:4:3: error: config field 'hidden' is declared twice",
                "t.arch:12:7: error: unknown function 'rms_nrom' (did you mean 'rms_norm'?)",
                "t.arch:13:7: error: rms_norm() takes 1 to 2 tensor arguments, got 3",
                "t.arch:14:19: error: rms_norm() has no attribute 'epz' (did you mean 'eps'?)",
                "t.arch:15:11: error: undefined name 'hiden' (did you mean 'hidden'?)",
                "t.arch:16:11: error: weight model.norm.wieght is not declared in the template's weights { }",
                "t.arch:17:3: error: 'return' belongs in a block",
            }));
}

TEST(Check, DiagnosticsShowTheSourceLine) {
  Template t = parse_ok(kMistakes);
  auto errors = check_template(t, op_table());
  ASSERT_GE(errors.size(), 2u);
  EXPECT_EQ(errors[1].message,
            "t.arch:12:7: error: unknown function 'rms_nrom' (did you mean 'rms_norm'?)\n"
            "      a = rms_nrom(x, model.norm.weight, eps: eps)\n"
            "          ^");
}

TEST(Check, ExactArgumentCounts) {
  EXPECT_EQ(check("family T\ngraph g(x: f32[seq]) {\n  y = silu(x, x)\n  z = add(x)\n  output o = z\n}\n"),
            (Lines{"t.arch:3:7: error: silu() takes 1 tensor argument, got 2",
                   "t.arch:4:7: error: add() takes 2 tensor arguments, got 1"}));
}

TEST(Check, UndefinedNameWithoutACloseMatchHasNoSuggestion) {
  EXPECT_EQ(check("family T\ngraph g(x: f32[seq]) {\n  output y = x + zzzzzz\n}\n"),
            (Lines{"t.arch:3:18: error: undefined name 'zzzzzz'"}));
}

TEST(Check, NamesAssignedAnywhereInABodyAreKnown) {
  // The check is flow-insensitive: `y` is assigned after its use, yet known.
  EXPECT_EQ(check("family T\ngraph g(x: f32[seq]) {\n  output o = y\n  y = x\n}\n"), Lines{});
}

// Config defaults may name any field (they resolve on demand, so an
// importing template's fields may feed the imported ones); other names must
// be defined.
TEST(Check, ConfigDefaultsMayNameAnyFieldButNothingUndefined) {
  EXPECT_EQ(check("family T\nconfig {\n  a: int = b\n  b: int = 1\n}\nflags {\n  f = nothing_here > 0\n}\n"
                  "graph g(x: f32[seq]) { output y = x }\n"),
            (Lines{"t.arch:7:7: error: undefined name 'nothing_here'"}));
}

// A weight whose whole name is one segment (BART's final_logits_bias) is a
// tensor where it is used, not an undefined name.
TEST(Check, AOneSegmentWeightIsATensor) {
  EXPECT_EQ(check("family T\nweights {\n  final_logits_bias: [1, 4]\n}\n"
                  "graph g(x: f32[seq, 4]) { output y = x + reshape(final_logits_bias, shape: [4]) }\n"),
            Lines{});
  EXPECT_EQ(check("family T\nweights {\n  final_logits_bias: [1, 4]\n}\n"
                  "graph g(x: f32[seq, 4]) { output y = x + final_logits_bais }\n"),
            (Lines{"t.arch:5:42: error: undefined name 'final_logits_bais'"}));
}

TEST(Check, FlagsMayAskAboutAnyTensorWithExists) {
  EXPECT_EQ(check("family T\nflags {\n  f = exists(model.anything.at.all)\n}\n"
                  "graph g(x: f32[seq]) { output y = x }\n"),
            Lines{});
}

TEST(Check, ExistsInABodyTakesAnyTensorName) {
  // exists() asks about the checkpoint, not about the template's weights:
  // only the names inside its {...} are checked.
  EXPECT_EQ(check("family T\nconfig { n: int = 2 }\ngraph g(x: f32[seq]) {\n"
                  "  for i in 0..n {\n    if exists(model.layers.{i}.extra.weight) { x = x }\n"
                  "    if exists(model.layers.{j}.extra.weight) { x = x }\n  }\n"
                  "  output y = x\n}\n"),
            (Lines{"t.arch:6:29: error: undefined name 'j' (did you mean 'n'?)"}));
}

TEST(Check, DuplicateFlagAndConfigName) {
  EXPECT_EQ(check("family T\nconfig { f: bool = true }\nflags {\n  f = true\n}\n"
                  "graph g(x: f32[seq]) { output y = x }\n"),
            (Lines{"t.arch:4:3: error: 'f' is declared twice"}));
}

const char* kPaths = R"(family T
config { n: int = 2 }
weights {
  model.layers.{i}.mlp.up.weight: [4, 4]
  model.norm.weight: [4]
  alias lm_head.weight = model.head.weight
}
graph g(x: f32[seq, 4]) {
  for i in 0..n {
    L = model.layers.{i}
    M = L.mlp
    x = x @ M.up.weight^T
    x = x @ L.mlp.up.weight^T
    x = x @ L.mlp.down.weight^T
    N = model.layerz.{i}
  }
  output y = x * model.norm.weight
}
)";

TEST(Check, WeightPathsThroughLocals) {
  // L = model.layers.{i} and M = L.mlp name prefixes of declared weights;
  // what is read through them must be declared.
  EXPECT_EQ(check(kPaths),
            (Lines{
                "t.arch:6:3: error: alias target model.head.weight is not a declared weight, nor is lm_head.weight",
                "t.arch:14:13: error: weight model.layers.{...}.mlp.down.weight is not declared in the "
                "template's weights { }",
                "t.arch:15:9: error: weight model.layerz.{...} is not declared in the template's weights { }",
            }));
}

TEST(Check, WeightIndexMustFitThePattern) {
  // A literal index fits a {i} pattern; a name where the pattern has a number does not.
  EXPECT_EQ(check("family T\nweights {\n  model.layers.{i}.w: [4]\n}\n"
                  "graph g(x: f32[seq, 4]) {\n  y = x * model.layers.0.w\n"
                  "  output z = y * model.layers.first.w\n}\n"),
            (Lines{"t.arch:7:18: error: weight model.layers.first.w is not declared in the template's "
                   "weights { }"}));
}

TEST(Check, WeightShapesAndConditionsSeeThePatternVariables) {
  EXPECT_EQ(check("family T\nconfig { h: int = 4 }\nweights {\n  model.layers.{i}.w: [h * i, hh] if i > 0\n}\n"
                  "graph g(x: f32[seq]) { output y = x }\n"),
            (Lines{"t.arch:4:31: error: undefined name 'hh' (did you mean 'h'?)"}));
}

TEST(Check, Blocks) {
  const char* src = R"(family T
block swiglu(x, gate, up) {
  y = reshape(silu(x @ gate^T) * (x @ up^T), shape: [seq, 4])
  return y
}
graph g(x: f32[seq, 4]) {
  a = swiglu(x, x)
  b = swigl(x, x, x)
  output y = a + b
}
)";
  EXPECT_EQ(check(src),
            (Lines{"t.arch:7:7: error: block 'swiglu' takes 3 arguments, got 2",
                   "t.arch:8:7: error: unknown function 'swigl' (did you mean 'swiglu'?)"}));
}

TEST(Check, ABlockSeesItsParametersSeqAndGraphInputsButNotGraphLocals) {
  EXPECT_EQ(check("family T\nblock f(input) {\n  return reshape(input + x + z, shape: [seq])\n}\n"
                  "graph g(x: f32[seq]) {\n  z = x\n  output y = f(x)\n}\n"),
            (Lines{"t.arch:3:30: error: undefined name 'z' (did you mean 'x'?)"}));
}

TEST(Check, LiteralDefaultsMustFitTheirTypes) {
  EXPECT_EQ(check("family T\nconfig {\n  n: int = 1.5\n  s: str = 3\n  l: [int] = [1, \"a\"]\n"
                  "  f: float = 1\n  j: json = [1]\n  o: [str] = null\n  b: bool = \"yes\"\n}\n"
                  "graph g(x: f32[seq]) { output y = x }\n"),
            (Lines{"t.arch:3:12: error: the default of 'n' does not fit its type int",
                   "t.arch:4:12: error: the default of 's' does not fit its type str",
                   "t.arch:5:14: error: the default of 'l' does not fit its type [int]",
                   "t.arch:9:13: error: the default of 'b' does not fit its type bool"}));
}

TEST(Check, UnresolvedImportsAreRefused) {
  EXPECT_EQ(check("family T\nimport \"base.arch\"\ngraph g(x: f32[seq]) { output y = x }\n"),
            (Lines{"t.arch:2:8: error: import \"base.arch\": the import was not resolved (templates with "
                   "imports are read with parse_template_file)"}));
}

TEST(Check, NoGraphAndNoFamily) {
  EXPECT_EQ(check("family T\nconfig { a: int }\n"),
            (Lines{"t.arch:1:8: error: the template defines no graph"}));
}

TEST(Check, TheRealTemplateChecksClean) {
  auto t = parse_template_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto errors = check_template(*t, op_table());
  for (const auto& e : errors) ADD_FAILURE() << e.message;
  EXPECT_TRUE(errors.empty());
}

TEST(Check, AMisspellingInTheRealTemplateIsFound) {
  auto t = parse_template_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  ASSERT_TRUE(t.ok()) << t.error().message;
  std::string src = *t->source;
  const std::string good = "return rms_norm(x, w,";
  size_t at = src.find(good);
  ASSERT_NE(at, std::string::npos);
  src.replace(at, good.size(), "return rms_nrom(x, w,");
  auto bad = parse_template("families/llama.arch", src);
  ASSERT_TRUE(bad.ok()) << bad.error().message;
  auto errors = check_template(*bad, op_table());
  ASSERT_EQ(errors.size(), 1u);
  // Where it is: the line of the replaced text, the column of the callee.
  int line = 1 + int(std::count(src.begin(), src.begin() + at, '\n'));
  int col = int(at - src.rfind('\n', at)) + int(std::string("return ").size());
  EXPECT_EQ(first_line(errors[0].message),
            "families/llama.arch:" + std::to_string(line) + ":" + std::to_string(col) +
                ": error: unknown function 'rms_nrom' (did you mean 'rms_norm'?)");
}

}  // namespace
}  // namespace arch::dsl

namespace arch::dsl {
namespace {

// A graph's run-time dims are names its body and blocks may use; a name
// no input's shape introduces is still undefined.
TEST(Check, NamedRunTimeDimsAreInScope) {
  EXPECT_EQ(check(R"(family T
config { hidden: int }
block heads(x) {
  return reshape(x, shape: [src, 2, 4])
}
graph decode(tokens: i32[seq], state memory: f32[src, hidden]) {
  output k = heads(memory)
  output bad = reshape(memory, shape: [frames, hidden])
}
)"),
            Lines{"t.arch:8:40: error: undefined name 'frames'"});
}

}  // namespace
}  // namespace arch::dsl

namespace arch::dsl {
namespace {

// A file of hundreds of faults: the first 50 listed (with their "did you
// mean"), the rest counted in one line, no suggestion worked out for them.
TEST(Check, ListsFiftyFaultsAndCountsTheRest) {
  std::string src = "family T\ngraph step(x: f32[seq, 4]) {\n";
  for (int k = 0; k < 200; ++k) src += "  y" + std::to_string(k) + " = x + missing_name" + std::to_string(k) + "\n";
  src += "  output y = x\n}\n";
  Lines got = check(src);
  ASSERT_EQ(got.size(), 51u);
  EXPECT_NE(got[0].find("3:12: error: undefined name 'missing_name0'"), std::string::npos) << got[0];
  EXPECT_NE(got[49].find("undefined name 'missing_name49'"), std::string::npos) << got[49];
  EXPECT_EQ(got[50], "t.arch: 150 more errors after these 50 not listed");
}

}  // namespace
}  // namespace arch::dsl

// parse_template: a template's text into its syntax tree, and syntax errors
// at the exact line and column, in the template author's words.
#include "dsl/parse.h"

#include <gtest/gtest.h>

#include "tests/dsl/dsl_test_util.h"
#include "tests/test_files.h"

namespace arch::dsl {
namespace {

using testing::caret_column;
using testing::first_line;
using testing::parse_error;
using testing::parse_ok;
using testing::sexpr;

// Line numbers matter below: line 1 is `family Tiny`.
const char* kTiny = R"(family Tiny
import "common.arch"

config {
  hidden_size: int
  heads: int = 4; head_dim: int = hidden_size / heads
  eps: float = 1e-6
  act: str = "silu"
  types: [str] = []
  scaling: json = null
}

flags {
  has_bias = exists(model.layers.0.q.bias)
  tied = not exists(lm_head.weight)
}

weights {
  model.embed.weight: [vocab, hidden_size]
  model.layers.{i}.q.weight: [hidden_size, hidden_size]
  model.layers.{i}.q.bias: [hidden_size] if has_bias
  optional model.norm.bias: [hidden_size]
  alias lm_head.weight = model.embed.weight if tied
}

block mlp(x, w) {
  y = x @ w^T
  return y
}

graph step(tokens: i32[seq], positions: i32[seq]) {
  h = embed(model.embed.weight, tokens)
  for i in 0..n as layers {
    L = model.layers.{i}
    if has_bias { h = h + L.q.bias } else if tied { h = -h } else { h = mlp(h, L.q.weight) }
    output hidden[i] = h
  }
  for j in 1..3 { h = h }
  output logits = h @ lm_head.weight^T
}
)";

TEST(Parse, FamilyAndImports) {
  Template t = parse_ok(kTiny);
  EXPECT_EQ(t.path, "t.arch");
  EXPECT_EQ(t.family, "Tiny");
  EXPECT_EQ(t.family_loc.line, 1);
  EXPECT_EQ(t.family_loc.col, 8);
  ASSERT_EQ(t.imports.size(), 1u);
  EXPECT_EQ(t.imports[0].first, "common.arch");
  EXPECT_EQ(t.imports[0].second.line, 2);
  ASSERT_NE(t.source, nullptr);
  EXPECT_EQ(*t.source, kTiny);
}

TEST(Parse, ConfigFieldsWithTypesAndDefaults) {
  Template t = parse_ok(kTiny);
  ASSERT_EQ(t.config.size(), 7u);
  struct Want {
    const char* name;
    const char* type;
    const char* default_sexpr;  // "" when required
    int line, col;
  };
  const Want want[] = {
      {"hidden_size", "int", "", 5, 3},
      {"heads", "int", "4", 6, 3},
      {"head_dim", "int", "(/ hidden_size heads)", 6, 19},
      {"eps", "float", "1e-06f", 7, 3},
      {"act", "str", "\"silu\"", 8, 3},
      {"types", "[str]", "[]", 9, 3},
      {"scaling", "json", "null", 10, 3},
  };
  for (size_t k = 0; k < t.config.size(); ++k) {
    SCOPED_TRACE(want[k].name);
    const ConfigField& f = t.config[k];
    EXPECT_EQ(f.name, want[k].name);
    EXPECT_EQ(f.type.str(), want[k].type);
    EXPECT_EQ(f.default_value ? sexpr(*f.default_value) : "", want[k].default_sexpr);
    EXPECT_EQ(f.loc.line, want[k].line);
    EXPECT_EQ(f.loc.col, want[k].col);
  }
  EXPECT_TRUE(t.config[5].type.list);
  EXPECT_EQ(t.config[5].type.elem, "str");
  EXPECT_TRUE(t.config[3].default_value->kind == Expr::Number && !t.config[3].default_value->is_int);
  EXPECT_DOUBLE_EQ(t.config[3].default_value->number, 1e-6);
}

TEST(Parse, Flags) {
  Template t = parse_ok(kTiny);
  ASSERT_EQ(t.flags.size(), 2u);
  EXPECT_EQ(t.flags[0].name, "has_bias");
  EXPECT_EQ(sexpr(*t.flags[0].value), "(call exists model.layers.0.q.bias)");
  EXPECT_EQ(t.flags[0].loc.line, 14);
  EXPECT_EQ(t.flags[1].name, "tied");
  EXPECT_EQ(sexpr(*t.flags[1].value), "(not (call exists lm_head.weight))");
}

TEST(Parse, WeightsWithPatternsConditionsOptionalAndAliases) {
  Template t = parse_ok(kTiny);
  ASSERT_EQ(t.weights.size(), 5u);

  const WeightDecl& embed = t.weights[0];
  EXPECT_EQ(path_str(embed.pattern), "model.embed.weight");
  ASSERT_EQ(embed.shape.size(), 2u);
  EXPECT_EQ(sexpr(*embed.shape[0]), "vocab");
  EXPECT_EQ(sexpr(*embed.shape[1]), "hidden_size");
  EXPECT_FALSE(embed.optional);
  EXPECT_FALSE(embed.alias);
  EXPECT_EQ(embed.condition, nullptr);
  EXPECT_EQ(embed.loc.line, 19);
  EXPECT_EQ(embed.loc.col, 3);

  const WeightDecl& q = t.weights[1];
  EXPECT_EQ(path_str(q.pattern), "model.layers.{i}.q.weight");
  ASSERT_EQ(q.pattern.size(), 5u);
  EXPECT_EQ(q.pattern[2].kind, PathSeg::Interp);
  EXPECT_EQ(q.pattern[2].name, "i");  // the pattern variable
  EXPECT_EQ(q.pattern[2].expr, nullptr);

  const WeightDecl& bias = t.weights[2];
  ASSERT_NE(bias.condition, nullptr);
  EXPECT_EQ(sexpr(*bias.condition), "has_bias");

  const WeightDecl& norm = t.weights[3];
  EXPECT_TRUE(norm.optional);
  EXPECT_EQ(path_str(norm.pattern), "model.norm.bias");
  EXPECT_EQ(norm.loc.col, 3);  // at 'optional'

  const WeightDecl& alias = t.weights[4];
  EXPECT_TRUE(alias.alias);
  EXPECT_EQ(path_str(alias.pattern), "lm_head.weight");
  EXPECT_EQ(path_str(alias.target), "model.embed.weight");
  EXPECT_TRUE(alias.shape.empty());
  ASSERT_NE(alias.condition, nullptr);
  EXPECT_EQ(sexpr(*alias.condition), "tied");
}

TEST(Parse, Blocks) {
  Template t = parse_ok(kTiny);
  ASSERT_EQ(t.blocks.size(), 1u);
  const BlockDef& b = t.blocks[0];
  EXPECT_EQ(b.name, "mlp");
  EXPECT_EQ(b.params, (std::vector<std::string>{"x", "w"}));
  ASSERT_EQ(b.body.size(), 2u);
  EXPECT_EQ(b.body[0].kind, Stmt::Assign);
  EXPECT_EQ(b.body[0].name, "y");
  EXPECT_EQ(sexpr(*b.body[0].value), "(@ x (^T w))");
  EXPECT_EQ(b.body[1].kind, Stmt::Return);
  EXPECT_EQ(sexpr(*b.body[1].value), "y");
  EXPECT_EQ(b.body[1].loc.line, 28);
  EXPECT_EQ(b.body[1].loc.col, 3);
}

TEST(Parse, GraphInputsAndStatements) {
  Template t = parse_ok(kTiny);
  ASSERT_EQ(t.graphs.size(), 1u);
  const GraphDef& g = t.graphs[0];
  EXPECT_EQ(g.name, "step");
  ASSERT_EQ(g.inputs.size(), 2u);
  EXPECT_EQ(g.inputs[0].name, "tokens");
  EXPECT_EQ(g.inputs[0].dtype, "i32");
  ASSERT_EQ(g.inputs[0].shape.size(), 1u);
  EXPECT_EQ(sexpr(*g.inputs[0].shape[0]), "seq");
  EXPECT_EQ(g.inputs[1].name, "positions");
  EXPECT_EQ(g.inputs[1].loc.line, 31);
  EXPECT_EQ(g.inputs[1].loc.col, 30);

  ASSERT_EQ(g.body.size(), 4u);
  EXPECT_EQ(g.body[0].kind, Stmt::Assign);
  EXPECT_EQ(sexpr(*g.body[0].value), "(call embed model.embed.weight tokens)");

  const Stmt& loop = g.body[1];
  EXPECT_EQ(loop.kind, Stmt::For);
  EXPECT_EQ(loop.name, "i");
  EXPECT_EQ(loop.scope, "layers");
  EXPECT_EQ(sexpr(*loop.value), "0");
  EXPECT_EQ(sexpr(*loop.end), "n");
  EXPECT_EQ(loop.loc.line, 33);
  ASSERT_EQ(loop.body.size(), 3u);
  EXPECT_EQ(sexpr(*loop.body[0].value), "model.layers.{i}");

  // if / else if / else: the else-if is an If statement inside else_body.
  const Stmt& branch = loop.body[1];
  EXPECT_EQ(branch.kind, Stmt::If);
  EXPECT_EQ(sexpr(*branch.value), "has_bias");
  ASSERT_EQ(branch.body.size(), 1u);
  EXPECT_EQ(sexpr(*branch.body[0].value), "(+ h L.q.bias)");
  ASSERT_EQ(branch.else_body.size(), 1u);
  const Stmt& elif = branch.else_body[0];
  EXPECT_EQ(elif.kind, Stmt::If);
  EXPECT_EQ(sexpr(*elif.value), "tied");
  ASSERT_EQ(elif.body.size(), 1u);
  EXPECT_EQ(sexpr(*elif.body[0].value), "(- h)");
  ASSERT_EQ(elif.else_body.size(), 1u);
  EXPECT_EQ(sexpr(*elif.else_body[0].value), "(call mlp h L.q.weight)");

  const Stmt& stacked = loop.body[2];
  EXPECT_EQ(stacked.kind, Stmt::Output);
  EXPECT_EQ(stacked.name, "hidden");
  ASSERT_NE(stacked.index, nullptr);
  EXPECT_EQ(sexpr(*stacked.index), "i");
  EXPECT_EQ(sexpr(*stacked.value), "h");

  EXPECT_EQ(g.body[2].kind, Stmt::For);
  EXPECT_EQ(g.body[2].scope, "");  // no `as`: no name prefix

  const Stmt& out = g.body[3];
  EXPECT_EQ(out.kind, Stmt::Output);
  EXPECT_EQ(out.name, "logits");
  EXPECT_EQ(out.index, nullptr);
  EXPECT_EQ(sexpr(*out.value), "(@ h (^T lm_head.weight))");
}

// The expression of `flags { f = EXPR }`.
std::string expr_of(const std::string& text) {
  Template t = parse_ok("family T\nflags {\n  f = " + text + "\n}\n");
  if (t.flags.size() != 1) return "<no flag>";
  return sexpr(*t.flags[0].value);
}

TEST(Parse, OperatorPrecedence) {
  EXPECT_EQ(expr_of("a + b * c"), "(+ a (* b c))");
  EXPECT_EQ(expr_of("a * b + c"), "(+ (* a b) c)");
  EXPECT_EQ(expr_of("a - b - c"), "(- (- a b) c)");  // left-associative
  EXPECT_EQ(expr_of("a / b // c % d"), "(% (// (/ a b) c) d)");
  EXPECT_EQ(expr_of("(a + b) * c"), "(* (+ a b) c)");
  EXPECT_EQ(expr_of("-a + b"), "(+ (- a) b)");
  EXPECT_EQ(expr_of("- -a"), "(- (- a))");
  EXPECT_EQ(expr_of("not a and b"), "(and (not a) b)");
  EXPECT_EQ(expr_of("a or b and c"), "(or a (and b c))");
  EXPECT_EQ(expr_of("not a == b"), "(not (== a b))");
  EXPECT_EQ(expr_of("x @ W^T"), "(@ x (^T W))");
  EXPECT_EQ(expr_of("x @ L.q.weight^T + b"), "(+ (@ x (^T L.q.weight)) b)");
  EXPECT_EQ(expr_of("a + 1 < b * 2"), "(< (+ a 1) (* b 2))");
  EXPECT_EQ(expr_of("a <= b"), "(<= a b)");
  EXPECT_EQ(expr_of("a >= b"), "(>= a b)");
  EXPECT_EQ(expr_of("a != b"), "(!= a b)");
  EXPECT_EQ(expr_of("a == \"silu\""), "(== a \"silu\")");
  EXPECT_EQ(expr_of("if c then a else b"), "(if c a b)");
  EXPECT_EQ(expr_of("if x > 0 then a + 1 else if y then 2 else 3"), "(if (> x 0) (+ a 1) (if y 2 3))");
  EXPECT_EQ(expr_of("types[i] == \"sliding\""), "(== (index types i) \"sliding\")");
  EXPECT_EQ(expr_of("m[0][1]^T"), "(^T (index (index m 0) 1))");
  EXPECT_EQ(expr_of("f(a, b, k: 1 + 2)"), "(call f a b k=(+ 1 2))");
  EXPECT_EQ(expr_of("f()"), "(call f)");
  EXPECT_EQ(expr_of("[1, 2.5, true, null, \"s\",]"), "[1 2.5f true null \"s\"]");
  EXPECT_EQ(expr_of("model.layers.{i + 1}.w"), "model.layers.{(+ i 1)}.w");
  EXPECT_EQ(expr_of("3e2"), "300f");
}

TEST(Parse, ExpressionLocations) {
  Template t = parse_ok("family T\nflags {\n  f = a + b * c\n  g = \"s\"\n}\n");
  ASSERT_EQ(t.flags.size(), 2u);
  const Expr& sum = *t.flags[0].value;
  EXPECT_EQ(sum.loc.line, 3);
  EXPECT_EQ(sum.loc.col, 9);  // a binary expression is located at its operator
  EXPECT_EQ(sum.args[1]->loc.col, 13);
  EXPECT_EQ(sum.args[0]->loc.col, 7);
  EXPECT_EQ(t.flags[1].value->loc.col, 7);  // a string at its opening quote
}

TEST(Parse, RangeWhoseStartIsAName) {
  // `first..last`: the '.' of '..' is not a path separator.
  Template t = parse_ok("family T\ngraph g() {\n  for i in first..last { x = i }\n  for j in L.k..n { }\n}\n");
  ASSERT_EQ(t.graphs.size(), 1u);
  ASSERT_EQ(t.graphs[0].body.size(), 2u);
  const Stmt& loop = t.graphs[0].body[0];
  EXPECT_EQ(sexpr(*loop.value), "first");
  EXPECT_EQ(sexpr(*loop.end), "last");
  EXPECT_EQ(sexpr(*t.graphs[0].body[1].value), "L.k");
}

TEST(Parse, CommentsSemicolonsAndNewlines) {
  Template t = parse_ok(
      "# a comment\nfamily T  # trailing\nconfig { a: int = 1; b: int = a +\n  2 }\n"
      "graph g(x: f32[seq, 4]) { y = x; output o = y }\n");
  ASSERT_EQ(t.graphs.size(), 1u);
  ASSERT_EQ(t.config.size(), 2u);
  EXPECT_EQ(sexpr(*t.config[1].default_value), "(+ a 2)");  // an expression may span lines
  EXPECT_EQ(t.graphs[0].body.size(), 2u);
}

TEST(Parse, EmptyFileSaysWhatATemplateStartsWith) {
  std::string e = parse_error("");
  EXPECT_EQ(first_line(e), "t.arch:1:1: error: a template starts with 'family NAME'");
}

// ---- syntax errors ----------------------------------------------------------

struct SyntaxCase {
  const char* what;
  const char* source;
  const char* first_line;  // the whole first line of the diagnostic
  int col;                 // where its caret points
};

class SyntaxError : public ::testing::TestWithParam<SyntaxCase> {};

TEST_P(SyntaxError, AtTheExactLineAndColumn) {
  const SyntaxCase& c = GetParam();
  std::string e = parse_error(c.source);
  EXPECT_EQ(first_line(e), c.first_line) << e;
  EXPECT_EQ(caret_column(e), c.col) << e;
  EXPECT_EQ(e.find("grammar::"), std::string::npos) << e;
  EXPECT_EQ(e.find("tao::"), std::string::npos) << e;
}

const SyntaxCase kSyntaxCases[] = {
    {"missing '}' of a block body",
     "family T\nblock f(x) {\n  y = x\n\ngraph g() { }\n",
     "t.arch:5:1: error: expected a statement ('name = expression', 'if', 'for', 'output', "
     "'return') or '}'",
     1},
    {"missing '}' of a graph body at the end of the file",
     "family T\ngraph g(x: f32[seq]) {\n  output y = x\n",
     "t.arch:4:1: error: expected a statement ('name = expression', 'if', 'for', 'output', "
     "'return') or '}'",
     1},
    {"missing ':' in a config field",
     "family T\nconfig {\n  hidden_size int\n}\n",
     "t.arch:3:15: error: expected ':' and a type after the config field's name", 15},
    {"bad type",
     "family T\nconfig {\n  hidden_size: integer\n}\n",
     "t.arch:3:16: error: expected a type: int, float, bool, str, json, or a list such as [int]", 16},
    {"bad list element type",
     "family T\nconfig {\n  types: [string]\n}\n",
     "t.arch:3:11: error: expected an element type: int, float, bool, str or json", 11},
    {"'^' without T",
     "family T\ngraph g(x: f32[seq]) {\n  y = x @ W^t\n}\n",
     "t.arch:3:13: error: expected 'T' after '^' (transpose is written W^T)", 13},
    {"unterminated string",
     "family T\nconfig {\n  act: str = \"silu\n}\n",
     "t.arch:3:19: error: unterminated string: expected '\"' before the end of the line", 19},
    // Found by the fuzzer: a stray byte reached cast's attribute, whose
    // message dumped it as JSON (which throws on it).
    {"a byte that is not UTF-8 in a string",
     "family T\ngraph g(x: f32[seq]) {\n  y = cast(x, dtype: \"f\xff\" \"32\")\n}\n",
     "t.arch:3:24: error: a byte that is not UTF-8 text in a string (a template is UTF-8)", 24},
    {"missing expression after '='",
     "family T\ngraph g(x: f32[seq]) {\n  y = )\n}\n",
     "t.arch:3:7: error: expected an expression", 7},
    {"missing expression after '=' at the end of a line: reported at the next token",
     "family T\ngraph g(x: f32[seq]) {\n  y =\n  output z = x\n}\n",
     "t.arch:4:3: error: expected an expression", 3},
    {"missing '..' in a for range",
     "family T\ngraph g() {\n  for i in 0 num_layers { }\n}\n",
     "t.arch:3:14: error: expected '..' in the loop range, e.g. 0..num_hidden_layers", 14},
    {"stray token at top level",
     "family T\nconfig { a: int }\nlayers = 3\n",
     "t.arch:3:1: error: expected 'config', 'flags', 'weights', 'block', 'graph' or 'import'", 1},
    {"missing ')' in a call",
     "family T\ngraph g(x: f32[seq]) {\n  y = rms_norm(x, w eps: 1e-5)\n}\n",
     "t.arch:3:21: error: expected ',' or ')' in the argument list", 21},
    {"missing ']' in a list",
     "family T\ngraph g(x: f32[seq]) {\n  y = reshape(x, shape: [seq, 4 8])\n}\n",
     "t.arch:3:33: error: expected ',' or ']' in the list", 33},
    {"missing '=' after a flag's name",
     "family T\nflags {\n  tied exists(lm_head.weight)\n}\n",
     "t.arch:3:8: error: expected '=' and the flag's expression", 8},
    {"missing ':' after a weight's name",
     "family T\nweights {\n  model.norm.weight [4]\n}\n",
     "t.arch:3:21: error: expected ':' and the weight's shape, e.g. ': [hidden_size]'", 21},
    {"bad segment in a weight pattern",
     "family T\nweights {\n  model.layers.{i.w: [4]\n}\n",
     "t.arch:3:16: error: expected a name, a number or '{var}' after '.' in the weight name", 16},
    {"missing 'then' in a conditional expression",
     "family T\nflags {\n  f = if a b else c\n}\n",
     "t.arch:3:12: error: expected 'then' in 'if CONDITION then A else B'", 12},
    {"missing operand after an operator",
     "family T\nflags {\n  f = a * }\n",
     "t.arch:3:11: error: expected an operand after the operator", 11},
    {"missing 'in' after the loop variable",
     "family T\ngraph g() {\n  for i 0..3 { }\n}\n",
     "t.arch:3:9: error: expected 'in' after the loop variable", 9},
    {"missing input type",
     "family T\ngraph g(tokens i32[seq]) { }\n",
     "t.arch:2:16: error: expected ':' and the input's type, e.g. 'tokens: i32[seq]'", 16},
    {"missing '(' after a block's name",
     "family T\nblock f { }\n",
     "t.arch:2:9: error: expected '(' and the block's parameters", 9},
    {"no family",
     "config { a: int }\n",
     "t.arch:1:1: error: a template starts with 'family NAME'", 1},
    {"missing ']' of an index",
     "family T\nflags {\n  f = types[0 }\n",
     "t.arch:3:15: error: expected ']' to close the index", 15},
    {"missing '{' after 'config'",
     "family T\nconfig\n  a: int\n",
     "t.arch:3:3: error: expected '{'", 3},
};

INSTANTIATE_TEST_SUITE_P(Mistakes, SyntaxError, ::testing::ValuesIn(kSyntaxCases),
                         [](const ::testing::TestParamInfo<SyntaxCase>& info) {
                           return "case" + std::to_string(info.index);
                         });

TEST(Parse, DiagnosticShowsTheLineAndACaret) {
  std::string e = parse_error("family T\nconfig {\n  hidden_size int\n}\n");
  auto l = testing::lines_of(e);
  ASSERT_EQ(l.size(), 3u) << e;
  EXPECT_EQ(l[1], "      hidden_size int");
  EXPECT_EQ(l[2], "                  ^");
}

TEST(Parse, MissingFileNamesIt) {
  auto t = parse_template_file("/nonexistent/dir/x.arch");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().message, "/nonexistent/dir/x.arch: error: cannot open the template file");
}

// A template that imports another: the importer's definitions replace the
// imported ones by name, in place; its weights are matched first.
TEST(Parse, ImportsMergeByName) {
  auto t = parse_template_file(ARCHETYPE_SOURCE_DIR "/families/gemma.arch");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->family, "LlamaStylePlus");
  ASSERT_EQ(t->files.size(), 2u);
  EXPECT_EQ(t->files[1].path, ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  int norms = 0;
  for (const auto& b : t->blocks)
    if (b.name == "norm") {
      ++norms;
      EXPECT_EQ(b.loc.file, 0);  // gemma's, not llama's
    }
  EXPECT_EQ(norms, 1);
  EXPECT_TRUE(t->imports.empty());
  EXPECT_EQ(path_str(t->weights.front().pattern), "model.layers.{i}.pre_feedforward_layernorm.weight");
}

// a.arch imports b.arch imports a.arch: an error at the import that closes
// the cycle, as is a file importing itself.
TEST(Parse, AnImportCycleIsAnError) {
  arch::testing::TempDir dir;
  arch::testing::write_file(dir / "a.arch", "family T\nimport \"b.arch\"\ngraph step(x: f32[seq]) { output y = x }\n");
  arch::testing::write_file(dir / "b.arch", "family T\nimport \"a.arch\"\n");
  arch::testing::write_file(dir / "self.arch", "family T\n\nimport \"self.arch\"\n");
  auto cycle = parse_template_file(dir / "a.arch");
  ASSERT_FALSE(cycle.ok());
  EXPECT_EQ(first_line(cycle.error().message),
            dir / "b.arch" + ":2:8: error: import cycle: " + (dir / "a.arch") + " imports itself");
  auto self = parse_template_file(dir / "self.arch");
  ASSERT_FALSE(self.ok());
  EXPECT_EQ(first_line(self.error().message),
            dir / "self.arch" + ":3:8: error: import cycle: " + (dir / "self.arch") + " imports itself");
}

// Two graphs of one name in one file: the later would silently replace the
// earlier, so it is an error naming both places.
TEST(Parse, AGraphDefinedTwiceInOneFileNamesBoth) {
  const std::string twice =
      "family T\ngraph step(x: f32[seq]) { output y = x }\ngraph encode(x: f32[seq]) { output e = x }\n"
      "graph step(x: f32[seq]) {\n  output z = x\n}\n";
  EXPECT_EQ(first_line(parse_error(twice)), "t.arch:4:1: error: graph 'step' is defined twice (first at t.arch:2:1)");
  arch::testing::TempDir dir;
  arch::testing::write_file(dir / "base.arch", twice);
  arch::testing::write_file(dir / "top.arch", "family T\nimport \"base.arch\"\n");
  auto imported = parse_template_file(dir / "top.arch");
  ASSERT_FALSE(imported.ok());
  EXPECT_EQ(first_line(imported.error().message), dir / "base.arch" +
                                                      ":4:1: error: graph 'step' is defined twice (first at " +
                                                      (dir / "base.arch") + ":2:1)");
}

// Blocks too: two of one name in one file, or from two imports (a block, a
// config field, a flag), would have one shadow the other silently.
TEST(Parse, BlocksAndFieldsDefinedTwiceNameBoth) {
  const std::string twice = "family T\nblock f(x) { return x }\nblock f(x) { return x + 1 }\n"
                            "graph step(x: f32[seq]) { output y = f(x) }\n";
  EXPECT_EQ(first_line(parse_error(twice)), "t.arch:3:1: error: block 'f' is defined twice (first at t.arch:2:1)");
  arch::testing::TempDir dir;
  arch::testing::write_file(dir / "a.arch", "family A\nconfig {\n  eps: float = 1e-5\n}\nblock f(x) { return x }\n");
  arch::testing::write_file(dir / "b.arch", "family B\nconfig {\n  eps: float = 1e-6\n}\n\nblock f(x) { return x + 1 }\n");
  arch::testing::write_file(dir / "both.arch", "family T\nimport \"a.arch\"\nimport \"b.arch\"\n");
  auto both = parse_template_file(dir / "both.arch");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(first_line(both.error().message),
            dir / "both.arch" + ":3:8: error: config field 'eps' is defined twice: at " + (dir / "b.arch") +
                ":3:3 (imported here) and at " + (dir / "a.arch") + ":3:3 (imported before); define it in " +
                (dir / "both.arch") + " to choose one");
  // Choosing both itself, the block's two imports remain.
  arch::testing::write_file(dir / "field.arch", "family T\nimport \"a.arch\"\nimport \"b.arch\"\nconfig {\n  eps: float = 1e-5\n}\n");
  auto field = parse_template_file(dir / "field.arch");
  ASSERT_FALSE(field.ok());
  EXPECT_NE(first_line(field.error().message).find("block 'f' is defined twice: at " + (dir / "b.arch") + ":6:1"),
            std::string::npos) << field.error().message;
  arch::testing::write_file(dir / "chooses.arch", "family T\nimport \"a.arch\"\nimport \"b.arch\"\nconfig {\n  eps: float = 1e-5\n}\n"
                                                  "block f(x) { return x }\n");
  auto chooses = parse_template_file(dir / "chooses.arch");
  EXPECT_TRUE(chooses.ok()) << chooses.error().message;
}

// Two imports defining one graph: which one the template runs would be the
// order of its imports, silently. The importer defining it itself chooses
// (that is how a family extends another), and one file reached along two
// import paths is one definition.
TEST(Parse, AGraphFromTwoImportsNamesBoth) {
  arch::testing::TempDir dir;
  const std::string step = "graph step(x: f32[seq]) { output y = x }\n";
  arch::testing::write_file(dir / "a.arch", "family A\n" + step);
  arch::testing::write_file(dir / "b.arch", "family B\n\n" + step);
  arch::testing::write_file(dir / "both.arch", "family T\nimport \"a.arch\"\nimport \"b.arch\"\n");
  auto both = parse_template_file(dir / "both.arch");
  ASSERT_FALSE(both.ok());
  EXPECT_EQ(first_line(both.error().message),
            dir / "both.arch" + ":3:8: error: graph 'step' is defined twice: at " + (dir / "b.arch") +
                ":3:1 (imported here) and at " + (dir / "a.arch") + ":2:1 (imported before); define it in " +
                (dir / "both.arch") + " to choose one");

  arch::testing::write_file(dir / "chooses.arch", "family T\nimport \"a.arch\"\nimport \"b.arch\"\n" + step);
  auto chooses = parse_template_file(dir / "chooses.arch");
  ASSERT_TRUE(chooses.ok()) << chooses.error().message;
  ASSERT_EQ(chooses->graphs.size(), 1u);
  EXPECT_EQ(chooses->graphs[0].loc.file, 0);  // its own
  EXPECT_EQ(chooses->graphs[0].loc.line, 4);

  arch::testing::write_file(dir / "left.arch", "family L\nimport \"a.arch\"\n");
  arch::testing::write_file(dir / "right.arch", "family R\nimport \"a.arch\"\n");
  arch::testing::write_file(dir / "diamond.arch", "family T\nimport \"left.arch\"\nimport \"right.arch\"\n");
  auto diamond = parse_template_file(dir / "diamond.arch");
  ASSERT_TRUE(diamond.ok()) << diamond.error().message;
  ASSERT_EQ(diamond->graphs.size(), 1u);
  EXPECT_EQ(diamond->files[size_t(diamond->graphs[0].loc.file)].path, dir / "a.arch");
}

TEST(Parse, TheRealTemplateParses) {
  auto t = parse_template_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->path, ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  EXPECT_EQ(t->family, "LlamaStyle");
  const ConfigField* head_dim = nullptr;
  for (const auto& f : t->config)
    if (f.name == "head_dim") head_dim = &f;
  ASSERT_NE(head_dim, nullptr);
  EXPECT_EQ(head_dim->type.str(), "int");
  ASSERT_NE(head_dim->default_value, nullptr);
  EXPECT_EQ(sexpr(*head_dim->default_value), "(/ hidden_size num_attention_heads)");
  std::vector<std::string> flags;
  for (const auto& f : t->flags) flags.push_back(f.name);
  EXPECT_EQ(flags, (std::vector<std::string>{"has_attention_bias", "has_o_bias", "has_mlp_bias",
                                             "has_qk_norm", "tied", "embed_stored"}));
  // The tied pair's aliases, one each way: whichever of the two is stored.
  ASSERT_GE(t->weights.size(), 2u);
  const WeightDecl& head = t->weights[t->weights.size() - 2];
  const WeightDecl& embed = t->weights.back();
  EXPECT_TRUE(head.alias && embed.alias);
  EXPECT_EQ(path_str(head.pattern), "lm_head.weight");
  EXPECT_EQ(path_str(head.target), "model.embed_tokens.weight");
  EXPECT_EQ(path_str(embed.pattern), "model.embed_tokens.weight");
  EXPECT_EQ(path_str(embed.target), "lm_head.weight");
  std::vector<std::string> blocks;
  for (const auto& b : t->blocks) blocks.push_back(b.name);
  EXPECT_EQ(blocks, (std::vector<std::string>{"embed_tokens", "norm", "norm_of", "activation", "is_sliding",
                                              "rope_of", "qkv", "self_attention", "attention_groups", "attention_output", "swiglu", "mlp",
                                              "decoder_layer", "final_norm", "lm_head_logits"}));
  ASSERT_EQ(t->graphs.size(), 1u);
  EXPECT_EQ(t->graphs[0].name, "step");
  ASSERT_EQ(t->graphs[0].inputs.size(), 2u);
  EXPECT_EQ(t->graphs[0].inputs[1].name, "positions");
}

TEST(Parse, UnreadTensorsAndWhy) {
  auto t = testing::parse_ok(R"(family T
weights {
  enc.weight: [4]
  unread posterior_encoder: "trains the model only"
  unread flows.{f}.post: "posterior"
}
graph step(x: f32[seq, 4]) { output y = x * enc.weight }
)");
  ASSERT_EQ(t.unread.size(), 2u);
  EXPECT_EQ(t.unread[0].reason, "trains the model only");
  EXPECT_EQ(t.unread[0].loc.line, 4);
  // The pattern's segments are a prefix of the name, whole segments only.
  EXPECT_TRUE(unread_matches(t.unread[0], "posterior_encoder.conv_pre.weight"));
  EXPECT_FALSE(unread_matches(t.unread[0], "posterior_encoder_x.weight"));
  EXPECT_TRUE(unread_matches(t.unread[1], "flows.3.post.conv.bias"));
  EXPECT_FALSE(unread_matches(t.unread[1], "flows.a.post.conv.bias"));
  EXPECT_FALSE(unread_matches(t.unread[1], "flows.3.pre.conv.bias"));
  const std::string e = testing::parse_error("family T\nweights {\n  unread posterior_encoder\n}\ngraph g(x: f32[4]) { output y = x }\n");
  EXPECT_NE(e.find("expected ':'"), std::string::npos) << e;
  const std::string r = testing::parse_error("family T\nweights {\n  unread posterior_encoder: why\n}\ngraph g(x: f32[4]) { output y = x }\n");
  EXPECT_NE(r.find("expected why no graph reads them"), std::string::npos) << r;
}

}  // namespace
}  // namespace arch::dsl

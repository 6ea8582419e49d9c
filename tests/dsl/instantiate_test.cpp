// instantiate: a template, a config and the checkpoint's tensor names give
// the IR graph: config resolved, flags decided, weights bound by tensor
// name, loops unrolled, every value named where the template made it.
#include "dsl/instantiate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "dsl/parse.h"
#include "importer/checkpoint/checkpoint.h"
#include "kernels/kernels.h"
#include "tests/dsl/dsl_test_util.h"
#include "tests/shared_data.h"

namespace arch::dsl {
namespace {

using testing::first_line;
using testing::parse_ok;
using nlohmann::json;

Result<Instance> run_with(const std::string& src, const InstantiateOptions& opt) {
  return instantiate(parse_ok(src), opt, op_table());
}

Result<Instance> run(const std::string& src, json config = json::object()) {
  InstantiateOptions opt;
  opt.config = std::move(config);
  return run_with(src, opt);
}

// The first line of the error instantiation fails with ("" if it succeeds).
std::string error_with(const std::string& src, const InstantiateOptions& opt) {
  auto r = run_with(src, opt);
  EXPECT_FALSE(r.ok()) << "instantiated, but an error was expected";
  return r.ok() ? "" : first_line(r.error().message);
}

std::string error_of(const std::string& src, json config = json::object()) {
  InstantiateOptions opt;
  opt.config = std::move(config);
  return error_with(src, opt);
}

const Val& cfg(const Instance& in, const std::string& name) {
  for (auto& [n, v] : in.config)
    if (n == name) return v;
  static Val none;
  ADD_FAILURE() << "no config field " << name;
  return none;
}

bool flag(const Instance& in, const std::string& name) {
  for (auto& [n, v] : in.flags)
    if (n == name) return v;
  ADD_FAILURE() << "no flag " << name;
  return false;
}

std::string type_of(const Graph& g, int value) {
  return shape_str(g.values.at(size_t(value)).type.shape);
}

// The node producing the value named `name`.
const Node* producer(const Graph& g, const std::string& name) {
  int v = g.find_value(name);
  if (v < 0 || g.values[size_t(v)].producer < 0) return nullptr;
  return &g.nodes[size_t(g.values[size_t(v)].producer)];
}

std::vector<std::string> weight_tensors(const Graph& g) {
  std::vector<std::string> out;
  for (auto& w : g.weights) out.push_back(w.tensor);
  return out;
}

// ---- config ------------------------------------------------------------------

// Line numbers matter: line 1 is `family T`.
const char* kConfig = R"(family T
config {
  hidden_size: int
  num_attention_heads: int
  head_dim: int = hidden_size / num_attention_heads
  eps: float = 1e-6
  theta: float = 10000
  act: str = "silu"
  window: int = 0
  scaling: json = null
  types: [str] = []
  use_bias: bool = false
}
graph step(x: f32[seq, hidden_size]) { output y = x }
)";

TEST(InstantiateConfig, DefaultsAndDerivedFields) {
  auto r = run(kConfig, {{"hidden_size", 64}, {"num_attention_heads", 4}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->config.size(), 10u);
  EXPECT_EQ(r->config[0].first, "hidden_size");  // in declaration order
  EXPECT_EQ(r->config[9].first, "use_bias");
  EXPECT_EQ(cfg(*r, "hidden_size").kind, Val::Int);
  EXPECT_EQ(cfg(*r, "hidden_size").i, 64);
  // hidden_size / num_attention_heads is 16.0; an int field takes it as 16.
  EXPECT_EQ(cfg(*r, "head_dim").kind, Val::Int);
  EXPECT_EQ(cfg(*r, "head_dim").i, 16);
  EXPECT_EQ(cfg(*r, "eps").kind, Val::Float);
  EXPECT_DOUBLE_EQ(cfg(*r, "eps").f, 1e-6);
  EXPECT_EQ(cfg(*r, "theta").kind, Val::Float);  // int default of a float field: a float
  EXPECT_DOUBLE_EQ(cfg(*r, "theta").f, 10000.0);
  EXPECT_EQ(cfg(*r, "act").s, "silu");
  EXPECT_EQ(cfg(*r, "window").i, 0);
  EXPECT_EQ(cfg(*r, "scaling").kind, Val::Null);
  EXPECT_EQ(cfg(*r, "types").kind, Val::List);
  EXPECT_TRUE(cfg(*r, "types").list.empty());
  EXPECT_EQ(cfg(*r, "use_bias").kind, Val::Bool);
  EXPECT_FALSE(cfg(*r, "use_bias").b);
  // Config values size the graph's inputs.
  EXPECT_EQ(type_of(r->graph, r->graph.inputs[0]), "[seq, 64]");
}

TEST(InstantiateConfig, GivenValuesWinAndNullMeansAbsent) {
  json config = {{"hidden_size", 64.0},  // an integral float is an int
                 {"num_attention_heads", 4},
                 {"head_dim", 32},
                 {"eps", 1e-5},
                 {"theta", 500000},
                 {"window", nullptr},  // null: the default applies
                 {"scaling", {{"rope_type", "llama3"}, {"factor", 8.0}}},
                 {"types", {"full", "sliding"}},
                 {"use_bias", true},
                 {"unrelated", "ignored"}};
  auto r = run(kConfig, config);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(cfg(*r, "hidden_size").kind, Val::Int);
  EXPECT_EQ(cfg(*r, "hidden_size").i, 64);
  EXPECT_EQ(cfg(*r, "head_dim").i, 32);  // given: the derivation is not used
  EXPECT_DOUBLE_EQ(cfg(*r, "eps").f, 1e-5);
  EXPECT_EQ(cfg(*r, "theta").kind, Val::Float);
  EXPECT_DOUBLE_EQ(cfg(*r, "theta").f, 500000.0);
  EXPECT_EQ(cfg(*r, "window").i, 0);
  ASSERT_EQ(cfg(*r, "scaling").kind, Val::Json);
  EXPECT_EQ(cfg(*r, "scaling").json["factor"], 8.0);
  ASSERT_EQ(cfg(*r, "types").list.size(), 2u);
  EXPECT_EQ(cfg(*r, "types").list[1].s, "sliding");
  EXPECT_TRUE(cfg(*r, "use_bias").b);
}

TEST(InstantiateConfig, MissingRequiredFieldNamesIt) {
  EXPECT_EQ(error_of(kConfig, {{"num_attention_heads", 4}}),
            "t.arch:3:3: error: config.json lacks 'hidden_size', which this template requires (int, no "
            "default)");
  EXPECT_EQ(error_of(kConfig, {{"hidden_size", nullptr}, {"num_attention_heads", 4}}),
            "t.arch:3:3: error: config.json lacks 'hidden_size', which this template requires (int, no "
            "default)");
}

TEST(InstantiateConfig, TypeMismatchNamesTheField) {
  EXPECT_EQ(error_of(kConfig, {{"hidden_size", "64"}, {"num_attention_heads", 4}}),
            "t.arch:3:3: error: config.json gives 'hidden_size' as str \"64\", the template declares int");
  EXPECT_EQ(error_of(kConfig, {{"hidden_size", 64.5}, {"num_attention_heads", 4}}),
            "t.arch:3:3: error: config.json gives 'hidden_size' as float 64.5, the template declares int");
  EXPECT_EQ(error_of(kConfig, {{"hidden_size", 64}, {"num_attention_heads", 4}, {"types", {1}}}),
            "t.arch:11:3: error: config.json gives 'types' as a list of 1, the template declares [str]");
  EXPECT_EQ(error_of(kConfig, {{"hidden_size", 64}, {"num_attention_heads", 4}, {"use_bias", 1}}),
            "t.arch:12:3: error: config.json gives 'use_bias' as int 1, the template declares bool");
}

TEST(InstantiateConfig, DerivedDefaultOfTheWrongType) {
  // 10 / 4 is 2.5: not an int. Reported at the default's operator.
  EXPECT_EQ(error_of(kConfig, {{"hidden_size", 10}, {"num_attention_heads", 4}}),
            "t.arch:5:31: error: the default of 'head_dim' is float 2.5, the field is declared int");
}

TEST(InstantiateConfig, Builtins) {
  const char* src = R"(family T
config {
  a: int = 7
  b: float = sqrt(16)
  c: int = int(7.9)
  d: float = float(a)
  e: int = min(a, 3)
  f: int = max(a, 3)
  g: json = null
  h: int = default(g, 5)
  k: int = len([1, 2, 3]) + len("abcd") + len(g)
  m: int = a // 2
  n: int = a % 4
  o: float = a / 2
  p: str = "x" + "y"
  q: [int] = [1] + [2, 3]
  r: int = if a > 5 then 1 else 2
  s: bool = a == 7 and not (a != 7) or false
  t: int = [10, 20, 30][-1]
  u: float = -a * 1.5
  v: bool = g == null and 1 == 1.0
  w: float = if g == null then 1.0 else g.factor
  x: int = default(a, 5)
}
graph step(x: f32[seq]) { output y = x }
)";
  auto r = run(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(cfg(*r, "b").f, 4.0);
  EXPECT_EQ(cfg(*r, "c").i, 7);
  EXPECT_EQ(cfg(*r, "d").kind, Val::Float);
  EXPECT_DOUBLE_EQ(cfg(*r, "d").f, 7.0);
  EXPECT_EQ(cfg(*r, "e").i, 3);
  EXPECT_EQ(cfg(*r, "f").i, 7);
  EXPECT_EQ(cfg(*r, "h").i, 5);
  EXPECT_EQ(cfg(*r, "k").i, 7);
  EXPECT_EQ(cfg(*r, "m").i, 3);
  EXPECT_EQ(cfg(*r, "n").i, 3);
  EXPECT_DOUBLE_EQ(cfg(*r, "o").f, 3.5);  // '/' is true division
  EXPECT_EQ(cfg(*r, "p").s, "xy");
  ASSERT_EQ(cfg(*r, "q").list.size(), 3u);
  EXPECT_EQ(cfg(*r, "q").list[2].i, 3);
  EXPECT_EQ(cfg(*r, "r").i, 1);
  EXPECT_TRUE(cfg(*r, "s").b);
  EXPECT_EQ(cfg(*r, "t").i, 30);
  EXPECT_DOUBLE_EQ(cfg(*r, "u").f, -10.5);
  EXPECT_TRUE(cfg(*r, "v").b);
  EXPECT_DOUBLE_EQ(cfg(*r, "w").f, 1.0);  // only the branch taken is evaluated
  EXPECT_EQ(cfg(*r, "x").i, 7);
}

TEST(InstantiateConfig, FloorDivisionAndModuloAsInPython) {
  const char* src = R"(family T
config {
  a: int = -7 // 2
  b: int = -7 % 2
  c: int = 7 % -2
  d: float = -7.0 // 2
  e: float = -7.5 % 2
  f: int = 7 // 2
  g: int = -8 // 2
}
graph step(x: f32[seq]) { output y = x }
)";
  auto r = run(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(cfg(*r, "a").i, -4);
  EXPECT_EQ(cfg(*r, "b").i, 1);
  EXPECT_EQ(cfg(*r, "c").i, -1);
  EXPECT_DOUBLE_EQ(cfg(*r, "d").f, -4.0);
  EXPECT_DOUBLE_EQ(cfg(*r, "e").f, 0.5);
  EXPECT_EQ(cfg(*r, "f").i, 3);
  EXPECT_EQ(cfg(*r, "g").i, -4);
}

TEST(InstantiateConfig, JsonFields) {
  const char* src = R"(family T
config {
  scaling: json = null
  factor: float = default(scaling.factor, 1.0)
  kind: str = default(scaling["rope_type"], "default")
}
graph step(x: f32[seq]) { output y = x }
)";
  auto r = run(src, {{"scaling", {{"rope_type", "linear"}, {"factor", 2}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(cfg(*r, "factor").f, 2.0);
  EXPECT_EQ(cfg(*r, "kind").s, "linear");
  // A missing member of an object is null...
  r = run(src, {{"scaling", json::object()}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_DOUBLE_EQ(cfg(*r, "factor").f, 1.0);
  // ...but a member of null is an error.
  EXPECT_EQ(error_of(src), "t.arch:4:27: error: 'scaling' is null, it has no member 'factor'");
}

TEST(InstantiateConfig, ErrorBuiltinStopsWithTheTemplatesMessage) {
  EXPECT_EQ(error_of("family T\nconfig {\n  n: int = 3\n  m: int = if n > 2 then error(\"n must be <= 2\") else n\n}\n"
                     "graph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:4:26: error: n must be <= 2");
}

TEST(InstantiateConfig, BuiltinArgumentErrors) {
  EXPECT_EQ(error_of("family T\nconfig {\n  n: int = min(3)\n}\ngraph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:3:12: error: min() takes 2 arguments, got 1");
  EXPECT_EQ(error_of("family T\nconfig {\n  n: int = len(3)\n}\ngraph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:3:12: error: len() of int 3");
  EXPECT_EQ(error_of("family T\nconfig {\n  n: int = 1 // 0\n}\ngraph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:3:14: error: division by zero (int 1 // int 0)");
}

TEST(InstantiateConfig, StrOfAnIntKeysAJsonObject) {
  // transformers 5.x writes per-layer overrides keyed by the layer's number.
  const char* src = R"(family T
config {
  per_layer_config: json = null
  layer: int = 4
  key: str = str(layer)
  same: str = str("x")
  neg: str = str(-12)
  head_dim: int = default(per_layer_config[str(layer)]["head_dim"], 16)
  other: int = default(per_layer_config[str(layer - 1)], 16)
}
graph step(x: f32[seq]) { output y = x }
)";
  auto r = run(src, {{"per_layer_config", {{"4", {{"head_dim", 32}}}}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(cfg(*r, "key").s, "4");
  EXPECT_EQ(cfg(*r, "same").s, "x");
  EXPECT_EQ(cfg(*r, "neg").s, "-12");
  EXPECT_EQ(cfg(*r, "head_dim").i, 32);
  EXPECT_EQ(cfg(*r, "other").i, 16);
  EXPECT_EQ(error_of("family T\nconfig {\n  s: str = str(1.5)\n}\ngraph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:3:12: error: str() takes an int or a str, not float 1.5");
  EXPECT_EQ(error_of("family T\nconfig {\n  s: str = str(1, 2)\n}\ngraph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:3:12: error: str() takes 1 argument, got 2");
}

// ---- flags --------------------------------------------------------------------

const char* kFlags = R"(family T
config {
  use_a: bool = false
  n: int = 1
}
flags {
  a = use_a
  b = exists(model.layers.0.extra.weight)
  c = a or b
  d = exists(model.layers.{n}.extra.weight)
}
graph step(x: f32[seq]) { output y = x }
)";

TEST(InstantiateFlags, FromTheConfig) {
  auto r = run(kFlags, {{"use_a", true}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->flags.size(), 4u);
  EXPECT_EQ(r->flags[0].first, "a");
  EXPECT_TRUE(flag(*r, "a"));
  EXPECT_FALSE(flag(*r, "b"));  // no tensor_exists: nothing exists
  EXPECT_TRUE(flag(*r, "c"));
  EXPECT_FALSE(flag(*r, "d"));
}

TEST(InstantiateFlags, FromTensorPresence) {
  std::vector<std::string> asked;
  InstantiateOptions opt;
  opt.config = {{"n", 0}};
  opt.tensor_exists = [&](const std::string& name) {
    asked.push_back(name);
    return name == "model.layers.0.extra.weight";
  };
  auto r = run_with(kFlags, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(flag(*r, "a"));
  EXPECT_TRUE(flag(*r, "b"));
  EXPECT_TRUE(flag(*r, "c"));
  EXPECT_TRUE(flag(*r, "d"));  // {n} is 0 here
  // `a or b` asks nothing: b is already decided.
  EXPECT_EQ(asked, (std::vector<std::string>{"model.layers.0.extra.weight", "model.layers.0.extra.weight"}));
}

TEST(InstantiateFlags, OverridesWinWithoutEvaluating) {
  std::vector<std::string> asked;
  InstantiateOptions opt;
  opt.tensor_exists = [&](const std::string& name) {
    asked.push_back(name);
    return false;
  };
  opt.flag_overrides = {{"b", true}, {"c", false}};
  auto r = run_with(kFlags, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(flag(*r, "b"));
  EXPECT_FALSE(flag(*r, "c"));  // even though b is true
  EXPECT_EQ(asked, (std::vector<std::string>{"model.layers.1.extra.weight"}));  // only d's
}

TEST(InstantiateFlags, UnknownOverrideIsAnError) {
  InstantiateOptions opt;
  opt.flag_overrides = {{"nope", true}};
  auto r = run_with(kFlags, opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "t.arch: error: --flag nope: the template has no such flag");
}

TEST(InstantiateFlags, AFlagMustBeABool) {
  EXPECT_EQ(error_of("family T\nconfig { n: int = 1 }\nflags {\n  f = n\n}\n"
                     "graph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:4:7: error: flag 'f' must be true or false, not int 1");
}

// ---- weights --------------------------------------------------------------------

const char* kWeights = R"(family T
config {
  vocab: int = 16
  hidden: int = 4
  tie: bool = false
}
flags {
  tied = tie or not exists(lm_head.weight)
}
weights {
  model.embed.weight: [vocab, hidden]
  model.norm.weight: [hidden]
  optional model.norm.bias: [hidden]
  lm_head.weight: [vocab, hidden]
  alias lm_head.weight = model.embed.weight if tied
}
graph step(tokens: i32[seq]) {
  h = embed(model.embed.weight, tokens)
  h = layer_norm(h, model.norm.weight, model.norm.bias, eps: 1e-5)
  output logits = h @ lm_head.weight^T
}
)";

InstantiateOptions with_tensors(std::set<std::string> names) {
  InstantiateOptions opt;
  opt.tensor_exists = [names](const std::string& n) { return names.count(n) > 0; };
  return opt;
}

TEST(InstantiateWeights, BoundByTensorNameWithTheirDeclaredShapes) {
  auto r = run_with(kWeights, with_tensors({"lm_head.weight"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_FALSE(flag(*r, "tied"));
  EXPECT_EQ(weight_tensors(g),
            (std::vector<std::string>{"model.embed.weight", "model.norm.weight", "lm_head.weight"}));
  int embed = g.find_value("model.embed.weight");
  ASSERT_GE(embed, 0);
  EXPECT_EQ(type_of(g, embed), "[16, 4]");
  EXPECT_EQ(g.values[size_t(embed)].loc.line, 11);  // where the template declares it
  EXPECT_EQ(g.weights[0].declared_as, "");
  const Node* logits = producer(g, "logits");
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->op, "matmul");
  EXPECT_EQ(logits->inputs[1], g.find_value("lm_head.weight"));
  EXPECT_EQ(logits->attrs["transpose_b"], true);
  EXPECT_EQ(type_of(g, logits->outputs[0]), "[seq, 16]");
}

TEST(InstantiateWeights, TiedLmHeadBindsTheEmbedding) {
  auto r = run_with(kWeights, with_tensors({}));  // no lm_head.weight in the checkpoint
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_TRUE(flag(*r, "tied"));
  // One weight value, read twice: by embed and by the logits matmul.
  EXPECT_EQ(weight_tensors(g), (std::vector<std::string>{"model.embed.weight", "model.norm.weight"}));
  const Node* logits = producer(g, "logits");
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(logits->inputs[1], g.find_value("model.embed.weight"));
  EXPECT_EQ(g.find_value("lm_head.weight"), -1);
}

TEST(InstantiateWeights, AnAliasReadFirstRecordsItsDeclaredName) {
  const char* src = R"(family T
weights {
  model.embed.weight: [16, 4]
  alias lm_head.weight = model.embed.weight
}
graph step(x: f32[seq, 4]) { output logits = x @ lm_head.weight^T }
)";
  auto r = run(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->graph.weights.size(), 1u);
  EXPECT_EQ(r->graph.weights[0].tensor, "model.embed.weight");
  EXPECT_EQ(r->graph.weights[0].declared_as, "lm_head.weight");
  EXPECT_EQ(r->graph.values[size_t(r->graph.weights[0].value)].name, "model.embed.weight");
}

TEST(InstantiateWeights, AModuleAliasMapsEveryNameUnderItWithTheShapesOfTheNamesItStandsFor) {
  // A layout mapped onto another's names: model.layers.{i} is read as
  // blocks.{i}, more specific aliases first; the shapes are the declared
  // model.* ones; an alias of an alias is followed.
  const char* src = R"(family T
weights {
  alias model.layers.{i}.attn.o = blocks.{i}.attention.dense
  alias model.layers.{i} = blocks.{i}
  alias model.norm = final_ln
  alias head = model.embed
  model.embed.weight: [16, 4]
  model.layers.{i}.attn.o.weight: [4, 4]
  model.layers.{i}.ln.weight: [4]
  model.norm.weight: [4]
}
graph step(x: f32[seq, 4]) {
  L = model.layers.{0}
  h = rms_norm(x @ L.attn.o.weight^T, L.ln.weight, eps: 1e-6)
  h = rms_norm(h, model.norm.weight, eps: 1e-6)
  output logits = h @ head.weight^T
}
)";
  auto r = run(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(weight_tensors(g), (std::vector<std::string>{"blocks.0.attention.dense.weight", "blocks.0.ln.weight",
                                                         "final_ln.weight", "model.embed.weight"}));
  EXPECT_EQ(type_of(g, g.find_value("blocks.0.attention.dense.weight")), "[4, 4]");
  EXPECT_EQ(type_of(g, g.find_value("model.embed.weight")), "[16, 4]");
  EXPECT_EQ(g.weights[0].declared_as, "model.layers.0.attn.o.weight");
  EXPECT_EQ(g.weights[3].declared_as, "head.weight");
}

TEST(InstantiateWeights, AnAliasThatGoesRoundInACircleIsAnError) {
  const char* src = R"(family T
weights {
  alias a = b
  alias b = a
  a.weight: [4]
}
graph step(x: f32[seq, 4]) { output y = x * a.weight }
)";
  EXPECT_NE(error_of(src).find("the aliases of weight a.weight go round in a circle"), std::string::npos)
      << error_of(src);
}

TEST(InstantiateWeights, StarShapesComeFromTheCheckpointAndStarSegmentsMatchAnyName) {
  const char* src = R"(family T
weights {
  enc.layer.{i}.*.*.weight: [*]
}
graph step(x: f32[seq, 4]) {
  h = x @ enc.layer.0.attn.q.weight^T
  output y = h @ enc.layer.0.ffn.wi.weight^T
}
)";
  InstantiateOptions opt;
  opt.tensor_shape = [](const std::string& n) -> std::optional<Dims> {
    if (n == "enc.layer.0.attn.q.weight") return Dims{8, 4};
    if (n == "enc.layer.0.ffn.wi.weight") return Dims{3, 8};
    return std::nullopt;
  };
  auto r = run_with(src, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(type_of(r->graph, r->graph.find_value("enc.layer.0.attn.q.weight")), "[8, 4]");
  EXPECT_EQ(type_of(r->graph, producer(r->graph, "y")->outputs[0]), "[seq, 3]");
  // A tensor the checkpoint lacks has no shape to take.
  const char* missing = R"(family T
weights { enc.*.weight: [*] }
graph step(x: f32[seq, 4]) { output y = x @ enc.k.weight^T }
)";
  auto bad = run_with(missing, opt);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.substr(0, bad.error().message.find('\n')),
            "t.arch:3:43: error: weight enc.k.weight takes its shape from the checkpoint (t.arch:2: [*]), and the "
            "checkpoint has no such tensor");
}

TEST(InstantiateOps, APlannerOnlyAttributeIsNotATemplates) {
  // matmul's `activation` is the planner's fold; a template writes act(x @ W^T).
  const char* src = R"(family T
weights { w: [4, 4] }
graph step(x: f32[seq, 4]) { output y = matmul(x, w, activation: "relu") }
)";
  auto r = run(src);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("matmul() has no attribute 'activation'"), std::string::npos) << r.error().message;
  // Nor is it defaulted into what instantiation makes.
  auto plain = run("family T\nweights { w: [4, 4] }\ngraph step(x: f32[seq, 4]) { output y = x @ w^T }\n");
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(producer(plain->graph, "y")->attrs.contains("activation"));
}

TEST(InstantiateWeights, OptionalWeightAbsentLeavesTheOptionalInputAbsent) {
  auto r = run_with(kWeights, with_tensors({}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Node* norm = producer(r->graph, "h#2");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->op, "layer_norm");
  ASSERT_EQ(norm->inputs.size(), 3u);
  EXPECT_EQ(norm->inputs[1], r->graph.find_value("model.norm.weight"));
  EXPECT_EQ(norm->inputs[2], -1);
  EXPECT_NE(print_graph(r->graph).find("h#2 = layer_norm(h, model.norm.weight, _) {\"eps\":1e-05} : f32[seq, 4]\n"),
            std::string::npos)
      << print_graph(r->graph);
}

TEST(InstantiateWeights, OptionalWeightPresentIsBound) {
  auto r = run_with(kWeights, with_tensors({"model.norm.bias"}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Node* norm = producer(r->graph, "h#2");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->inputs[2], r->graph.find_value("model.norm.bias"));
  EXPECT_EQ(r->graph.weights.size(), 3u);
}

TEST(InstantiateWeights, OptionalWeightAbsentWhereATensorIsRequired) {
  const char* src = R"(family T
weights { optional model.norm.bias: [4] }
graph step(x: f32[seq, 4]) {
  output y = x + model.norm.bias
}
)";
  EXPECT_EQ(error_of(src),
            "t.arch:4:16: error: add(): argument 'b': optional weight model.norm.bias is absent from the "
            "checkpoint");
}

const char* kConditional = R"(family T
config { use_bias: bool = false }
flags { has_bias = use_bias }
weights {
  model.proj.weight: [4, 4]
  model.proj.bias: [4] if has_bias
}
graph step(x: f32[seq, 4]) {
  y = x @ model.proj.weight^T
  output o = y + model.proj.bias
}
)";

TEST(InstantiateWeights, AWeightDeclaredUnderAFalseFlagCannotBeRead) {
  EXPECT_EQ(error_of(kConditional),
            "t.arch:10:16: error: weight model.proj.bias is declared (t.arch:6) only when its condition "
            "holds, and it does not here");
  auto r = run(kConditional, {{"use_bias", true}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(weight_tensors(r->graph), (std::vector<std::string>{"model.proj.weight", "model.proj.bias"}));
}

TEST(InstantiateWeights, ConditionalAlternativesOfOneName) {
  // The first declaration whose condition holds is the one; a failed
  // condition gives way to a later declaration of the same name.
  const char* src = R"(family T
config { big: bool = false; none: bool = false }
weights {
  model.w: [8] if big and not none
  model.w: [4] if not big and not none
}
graph step(x: f32[seq, 1]) { output y = x * model.w }
)";
  auto r = run(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(type_of(r->graph, r->graph.find_value("model.w")), "[4]");
  r = run(src, {{"big", true}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(type_of(r->graph, r->graph.find_value("model.w")), "[8]");
  EXPECT_EQ(error_of(src, {{"none", true}}),
            "t.arch:7:43: error: weight model.w is declared (t.arch:4) only when its condition holds, and "
            "it does not here");
}

TEST(InstantiateWeights, UndeclaredWeight) {
  EXPECT_EQ(error_of("family T\ngraph step(x: f32[seq, 4]) {\n  output y = x * model.w\n}\n"),
            // (reported at the operator that reads it)
            "t.arch:3:16: error: weight model.w is not declared in the template's weights { }");
}

TEST(InstantiateWeights, PatternVariablesSizeTheShape) {
  const char* src = R"(family T
config { n: int = 3 }
weights { model.layers.{i}.w: [i + 1] }
graph step(x: f32[seq, 4]) {
  for i in 0..n { y = model.layers.{i}.w + x[0] }
  output o = x
}
)";
  // x[0] is not allowed on a tensor: a compile-time index only.
  EXPECT_EQ(error_of(src), "t.arch:5:45: error: cannot index a tensor");
  const char* ok = R"(family T
config { n: int = 3 }
weights { model.layers.{i}.w: [i + 1] }
graph step(x: f32[seq, 1]) {
  for i in 0..n as layers { y = x * model.layers.{i}.w }
  output o = y
}
)";
  auto r = run(ok);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(type_of(r->graph, r->graph.find_value("model.layers.2.w")), "[3]");
  EXPECT_EQ(type_of(r->graph, r->graph.find_value("layers.2.y")), "[seq, 3]");  // [seq, 1] * [3]
}

// ---- statements and value names ---------------------------------------------------

const char* kNaming = R"(family T
config { n: int = 2 }
weights {
  model.layers.{i}.norm.weight: [4]
  model.layers.{i}.w.weight: [4, 4]
}
block mlp(x, w) {
  hid = x @ w^T
  return silu(hid)
}
graph step(x: f32[seq, 4]) {
  h = x
  for i in 0..n as layers {
    L = model.layers.{i}
    attn_norm = rms_norm(h, L.norm.weight, eps: 1e-5)
    h = attn_norm @ L.w.weight^T
    h = h * 2
    output hs[i] = h
  }
  for j in 0..1 { h = -h }
  z = mlp(h, model.layers.0.w.weight)
  output y = z
}
)";

TEST(InstantiateNames, ValuesAreNamedWhereTheTemplateMakesThem) {
  auto r = run(kNaming);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  std::vector<std::string> names;
  for (const Node& n : g.nodes)
    for (int o : n.outputs) names.push_back(g.values[size_t(o)].name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "layers.0.attn_norm",
                       "layers.0.h",
                       "layers.0.h.constant",  // the 2 of `h * 2`
                       "layers.0.h#2",         // h reassigned in the same scope
                       "layers.1.attn_norm",
                       "layers.1.h",
                       "layers.1.h.constant",
                       "layers.1.h#2",
                       "h",        // a loop without `as` adds no prefix
                       "mlp.hid",  // a block's own assignments: under the block's name
                       "z",        // a block call's result: the caller's name
                   }));
  const Node* c = producer(g, "layers.0.h.constant");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->op, "constant");
  EXPECT_EQ(c->attrs["value"], 2.0);
  ASSERT_NE(producer(g, "h"), nullptr);
  EXPECT_EQ(producer(g, "h")->op, "neg");
  const Node* norm = producer(g, "layers.1.attn_norm");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->inputs[1], g.find_value("model.layers.1.norm.weight"));
  EXPECT_EQ(norm->inputs[0], g.find_value("layers.0.h#2"));
  // The value's source location: the statement's expression.
  int an = g.find_value("layers.0.attn_norm");
  ASSERT_GE(an, 0);
  EXPECT_EQ(g.values[size_t(an)].loc.line, 15);
  EXPECT_EQ(g.values[size_t(an)].loc.col, 17);
  EXPECT_EQ(g.values[size_t(an)].loc.file, "t.arch");
}

TEST(InstantiateNames, StackedOutputs) {
  auto r = run(kNaming);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(g.outputs[0].name, "hs");
  EXPECT_EQ(g.outputs[0].index, 0);
  EXPECT_EQ(g.outputs[0].value, g.find_value("layers.0.h#2"));
  EXPECT_EQ(g.outputs[1].name, "hs");
  EXPECT_EQ(g.outputs[1].index, 1);
  EXPECT_EQ(g.outputs[1].value, g.find_value("layers.1.h#2"));
  EXPECT_EQ(g.outputs[2].name, "y");
  EXPECT_EQ(g.outputs[2].index, -1);
  EXPECT_EQ(g.outputs[2].value, g.find_value("z"));
  std::string text = print_graph(g);
  EXPECT_NE(text.find("output hs[1] = layers.1.h#2\noutput y = z\n"), std::string::npos) << text;
}

TEST(InstantiateNames, AnOutputOfANewValueIsNamedForTheOutput) {
  auto r = run("family T\nconfig { n: int = 2 }\ngraph step(x: f32[seq]) {\n"
               "  for i in 0..n as layers { output hs[i] = x * 3 }\n  output y = silu(x)\n}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(r->graph.find_value("layers.0.hs.0"), 0);
  EXPECT_GE(r->graph.find_value("layers.1.hs.1.constant"), 0);
  EXPECT_GE(r->graph.find_value("y"), 0);
}

TEST(InstantiateNames, GraphInputs) {
  auto r = run("family T\ngraph step(tokens: i32[seq], mask: f32[seq, 8], ids: i64[2]) { output y = mask }\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  ASSERT_EQ(g.inputs.size(), 3u);
  EXPECT_EQ(g.find_input("tokens"), g.inputs[0]);
  EXPECT_EQ(g.values[size_t(g.inputs[0])].type.dtype, DType::I32);
  EXPECT_EQ(type_of(g, g.inputs[1]), "[seq, 8]");
  EXPECT_EQ(g.values[size_t(g.inputs[2])].type.dtype, DType::I64);
  EXPECT_EQ(g.name, "step");
  EXPECT_EQ(g.family, "T");
}

TEST(InstantiateStatements, SqrtOfATensorIsTheSqrtOp) {
  auto r = run("family T\ngraph step(x: f32[seq, 4]) {\n  y = sqrt(x)\n  output o = y / sqrt(4.0)\n}\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Node* y = producer(r->graph, "y");
  ASSERT_NE(y, nullptr);
  EXPECT_EQ(y->op, "sqrt");
  const Node* c = producer(r->graph, "o.constant");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->attrs["value"], 2.0);  // sqrt of a number: computed now
}

TEST(InstantiateStatements, BlocksSeeSeq) {
  auto r = run("family T\nblock heads(x) {\n  return reshape(x, shape: [seq, 2, 2])\n}\n"
               "graph step(x: f32[seq, 4]) { output y = heads(x) }\n");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(type_of(r->graph, r->graph.find_value("y")), "[seq, 2, 2]");
  ASSERT_NE(producer(r->graph, "y"), nullptr);
  EXPECT_EQ(producer(r->graph, "y")->attrs["shape"], json({-1, 2, 2}));
}

TEST(InstantiateStatements, IfElseChoosesAtInstantiation) {
  const char* src = R"(family T
config { act: str = "silu" }
graph step(x: f32[seq]) {
  if act == "silu" { y = silu(x) } else if act == "gelu" { y = gelu(x) } else { y = relu(x) }
  output o = y
}
)";
  for (auto [act, op] : {std::pair{"silu", "silu"}, {"gelu", "gelu"}, {"relu", "relu"}}) {
    auto r = run(src, {{"act", act}});
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->graph.nodes.size(), 1u);
    EXPECT_EQ(r->graph.nodes[0].op, op);
  }
  EXPECT_EQ(error_of("family T\ngraph step(x: f32[seq]) {\n  if x { y = x }\n  output o = x\n}\n"),
            "t.arch:3:6: error: an 'if' condition must be true or false (a flag or a config test), not a "
            "tensor");
}

TEST(InstantiateStatements, Errors) {
  const char* pre = "family T\nweights { model.w: [4, 4] }\ngraph step(x: f32[seq, 4]) {\n";
  auto err = [&](const std::string& body) { return error_of(pre + body + "\n}\n"); };
  EXPECT_EQ(err("  output o = y\n  y = x"), "t.arch:4:14: error: undefined name 'y' (did you mean 'x'?)");
  EXPECT_EQ(err("  output o = x\n  output o = x"), "t.arch:5:3: error: output o is set twice");
  EXPECT_EQ(err("  y = x"), "t.arch:3:1: error: graph step sets no output");
  EXPECT_EQ(err("  output o = model.w^T @ x"), "t.arch:4:21: error: ^T on the left of @ is not supported");
  EXPECT_EQ(err("  output o = x + model.w^T"),
            "t.arch:4:16: error: W^T is only meaningful on the right of '@'");
  EXPECT_EQ(err("  for i in 0..2.5 { }\n  output o = x"),
            "t.arch:4:3: error: a loop range must be ints, not int 0 .. float 2.5");
  EXPECT_EQ(err("  output o = x < x"), "t.arch:4:16: error: operator '<' does not apply to tensors");
  EXPECT_EQ(err("  return x"), "t.arch:4:3: error: 'return' belongs in a block");
  EXPECT_EQ(err("  output o = x + \"a\""), "t.arch:4:16: error: add(): argument 'b' must be a tensor, not str \"a\"");
  EXPECT_EQ(err("  output o = frobnicate(x)"),
            "t.arch:4:14: error: unknown function 'frobnicate'");
  EXPECT_EQ(err("  output o = silu(x, x)"), "t.arch:4:14: error: silu() takes 1 tensor argument, got 2");
  EXPECT_EQ(err("  output o = rms_norm(x)"), "t.arch:4:14: error: rms_norm() needs the attribute 'eps:'");
  EXPECT_EQ(err("  output o = rms_norm(x, eps: \"a\")"),
            "t.arch:4:26: error: rms_norm(): 'eps' must be a float, not str \"a\"");
  EXPECT_EQ(err("  output o = rms_norm(x, epsilon: 1e-5)"),
            "t.arch:4:26: error: rms_norm() has no attribute 'epsilon'");
  EXPECT_EQ(error_of("family T\ngraph step(x: f16[seq]) { output o = x }\n"),
            "t.arch:2:12: error: unknown input type 'f16' (i32, i64 or f32)");
  InstantiateOptions opt;
  opt.graph = "prefill";
  auto r = run_with(std::string(pre) + "  output o = x\n}\n", opt);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "t.arch: error: the template has no graph 'prefill' (it has: step)");
}

TEST(InstantiateStatements, UnresolvedImportsAreRefused) {
  EXPECT_EQ(error_of("family T\nimport \"base.arch\"\ngraph step(x: f32[seq]) { output y = x }\n"),
            "t.arch:2:8: error: import \"base.arch\": the import was not resolved (templates with imports "
            "are read with parse_template_file)");
}

TEST(InstantiateStatements, ShapeRuleErrorsAtTheTemplateLine) {
  const char* pre = "family T\nweights { model.w: [8, 5] }\ngraph step(x: f32[seq, 4]) {\n";
  auto err = [&](const std::string& body) { return error_of(pre + body + "\n}\n"); };
  EXPECT_EQ(err("  y = x @ model.w^T\n  output o = y"),
            "t.arch:4:9: error: matmul: a [seq, 4] and b^T [8, 5]: inner dims 4 and 5 differ (inputs "
            "[seq, 4], [8, 5])");
  EXPECT_EQ(err("  output o = reshape(x, shape: [seq, 3])"),
            "t.arch:4:14: error: reshape: cannot reshape [seq, 4] to [seq, 3] (element counts differ: 4 * "
            "seq vs 3 * seq) (inputs [seq, 4])");
  EXPECT_EQ(err("  output o = x + model.w"),
            "t.arch:4:16: error: add: shapes [seq, 4] and [8, 5] do not broadcast (dim 0: seq vs 8) (inputs "
            "[seq, 4], [8, 5])");
  EXPECT_EQ(err("  output o = attention(x, x, x)"),
            "t.arch:4:14: error: attention: q, k, v must be [seq, heads, head_dim], got q [seq, 4], k [seq, "
            "4], v [seq, 4] (inputs [seq, 4], [seq, 4], [seq, 4])");
}

// ---- the real template ------------------------------------------------------------

Template llama() {
  auto t = parse_template_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  EXPECT_TRUE(t.ok()) << t.error().message;
  return t.ok() ? std::move(t).value() : Template{};
}

TEST(InstantiateLlama, Qwen3GoldenCheckpoint) {
  const std::string dir = arch::testing::golden_dir("qwen3");
  ARCH_REQUIRE_SHARED(dir + "/model.safetensors");
  auto ckpt = load_checkpoint(dir);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
  Template t = llama();
  InstantiateOptions opt;
  opt.config = ckpt->config;
  opt.tensor_exists = [&](const std::string& n) { return ckpt->has(n); };
  auto r = instantiate(t, opt, op_table());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;

  EXPECT_TRUE(flag(*r, "has_qk_norm"));
  EXPECT_TRUE(flag(*r, "tied"));
  EXPECT_FALSE(flag(*r, "has_attention_bias"));
  EXPECT_FALSE(flag(*r, "has_o_bias"));
  EXPECT_FALSE(flag(*r, "has_mlp_bias"));
  EXPECT_EQ(cfg(*r, "head_dim").i, 32);  // given by Qwen3, not hidden / heads (16)
  EXPECT_EQ(cfg(*r, "sliding_window").i, 0);  // null in config.json: the default

  for (int i = 0; i < 2; ++i) {
    std::string q_norm = "model.layers." + std::to_string(i) + ".self_attn.q_norm.weight";
    int w = g.find_value(q_norm);
    ASSERT_GE(w, 0) << q_norm;
    ASSERT_NE(g.weight_of(w), nullptr);
    EXPECT_EQ(g.weight_of(w)->tensor, q_norm);
    EXPECT_EQ(type_of(g, w), "[32]");
    const Node* n = producer(g, "layers." + std::to_string(i) + ".self_attention.q");
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->op, "rms_norm");
    EXPECT_EQ(n->inputs[1], w);
  }
  // Every bound weight is a tensor of the checkpoint.
  for (const auto& w : g.weights) EXPECT_TRUE(ckpt->has(w.tensor)) << w.tensor;
  EXPECT_EQ(g.find_value("lm_head.weight"), -1);

  const GraphOutput* logits = nullptr;
  int layer_outputs = 0;
  for (const auto& o : g.outputs) {
    if (o.name == "logits") logits = &o;
    if (o.name == "layer_outputs") {
      EXPECT_EQ(o.index, layer_outputs++);
    }
  }
  EXPECT_EQ(layer_outputs, 2);
  ASSERT_NE(logits, nullptr);
  EXPECT_EQ(type_of(g, logits->value), "[seq, 512]");
  const Node* lm = producer(g, "logits");
  ASSERT_NE(lm, nullptr);
  EXPECT_EQ(lm->inputs[1], g.find_value("model.embed_tokens.weight"));  // tied
}

TEST(InstantiateLlama, UnknownActivationStopsWithTheTemplatesMessage) {
  Template t = llama();
  InstantiateOptions opt;
  opt.config = {{"vocab_size", 32}, {"hidden_size", 8}, {"intermediate_size", 16},
                {"num_hidden_layers", 1}, {"num_attention_heads", 2}, {"hidden_act", "mish"}};
  auto r = instantiate(t, opt, op_table());
  ASSERT_FALSE(r.ok());
  // At the error(...) call of the activation block.
  const std::string& src = *t.source;
  size_t at = src.find("return error(");
  ASSERT_NE(at, std::string::npos);
  int line = 1 + int(std::count(src.begin(), src.begin() + long(at), '\n'));
  int col = int(at - src.rfind('\n', at)) + int(std::string("return ").size());
  EXPECT_EQ(first_line(r.error().message),
            ARCHETYPE_SOURCE_DIR "/families/llama.arch:" + std::to_string(line) + ":" + std::to_string(col) +
                ": error: hidden_act 'mish' is not one LlamaStyle knows (silu, swish, gelu, gelu_new, gelu_fast, "
                "gelu_pytorch_tanh, quick_gelu, relu)");
}

}  // namespace
}  // namespace arch::dsl

namespace arch::dsl {
namespace {

// A graph's own run-time dims and `state` inputs: `src` is bound per call,
// kept symbolic, usable in a reshape; the `state` input is marked held; an
// input may still be called `state`.
TEST(InstantiateGraphs, NamedDimsAndStateInputs) {
  const char* src = R"(family T
config { hidden: int }
graph decode(tokens: i32[seq], state memory: f32[src, hidden], state: i32[seq]) {
  k = reshape(memory, shape: [src, 2, 4])
  output k = k
}
graph encode(input_ids: i32[src]) {
  output ids = input_ids
}
)";
  InstantiateOptions opt;
  opt.config = {{"hidden", 8}};
  auto r = run_with(src, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(g.name, "decode");  // the first graph when none is named
  ASSERT_EQ(g.inputs.size(), 3u);
  EXPECT_EQ(g.values[size_t(g.inputs[1])].name, "memory");
  EXPECT_EQ(shape_str(g.values[size_t(g.inputs[1])].type.shape), "[src, 8]");
  EXPECT_EQ(g.values[size_t(g.inputs[2])].name, "state");
  EXPECT_EQ(g.held_inputs, std::vector<int>{g.inputs[1]});
  EXPECT_EQ(shape_str(g.values[size_t(g.find_value("k"))].type.shape), "[src, 2, 4]");
  EXPECT_NE(print_graph(g).find("state memory: f32[src, 8]"), std::string::npos) << print_graph(g);
  opt.graph = "encode";
  auto e = run_with(src, opt);
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->graph.name, "encode");
  EXPECT_TRUE(e->graph.held_inputs.empty());
  opt.graph = "denoise";
  EXPECT_NE(error_with(src, opt).find("no graph 'denoise' (it has: decode, encode)"), std::string::npos);
}

}  // namespace
}  // namespace arch::dsl

namespace arch::dsl {
namespace {

TEST(InstantiateInputs, DefaultsFromTheConfigOrAbsent) {
  const char* src = R"(family T
config { rate: float = 1.5 }
graph step(x: f32[seq, 4], r: f32[] = rate, n: f32[seq, 4] = null) { output y = normal_noise(x, r, null, n) }
)";
  auto r = run(src);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Graph& g = r->graph;
  EXPECT_EQ(g.default_of(g.inputs[0]), nullptr);
  ASSERT_NE(g.default_of(g.inputs[1]), nullptr);
  EXPECT_EQ(g.default_of(g.inputs[1])->number, 1.5);
  EXPECT_FALSE(g.default_of(g.inputs[1])->absent);
  ASSERT_NE(g.default_of(g.inputs[2]), nullptr);
  EXPECT_TRUE(g.default_of(g.inputs[2])->absent);
  EXPECT_NE(print_graph(g).find("r: f32[] = 1.5"), std::string::npos) << print_graph(g);
  // The config given wins, as for any field.
  auto given = run(src, json{{"rate", 0.5}});
  ASSERT_TRUE(given.ok()) << given.error().message;
  EXPECT_EQ(given->graph.default_of(given->graph.inputs[1])->number, 0.5);
}

TEST(InstantiateInputs, AnAbsentInputOnlyWhereAnOpTakesOne) {
  EXPECT_NE(error_of("family T\ngraph step(x: f32[seq, 4], n: f32[seq, 4] = null) { output y = x + n }\n")
                .find("input n may be absent (= null), but add"),
            std::string::npos)
      << error_of("family T\ngraph step(x: f32[seq, 4], n: f32[seq, 4] = null) { output y = x + n }\n");
  // A number fills a concrete shape only.
  EXPECT_NE(error_of("family T\ngraph step(x: f32[seq] = 2) { output y = x }\n").find("a default is a number"),
            std::string::npos);
}

}  // namespace
}  // namespace arch::dsl

// `import "x.arch" as ns(config: field, weights: prefix)`: a template kept
// whole under a name of its own, its config a sub-object of the config, its
// weights the checkpoint's names under the prefix; the importing file reads
// its fields, calls and redefines its blocks, and passes its weights.
#include <gtest/gtest.h>

#include <algorithm>

#include "dsl/check.h"
#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "kernels/kernels.h"
#include "tests/dsl/dsl_test_util.h"
#include "tests/test_files.h"

namespace arch::dsl {
namespace {

using nlohmann::json;
using testing::first_line;

// A tower with its own `width`, a weight and a block reading both.
const char* kTower = R"(family Tower
config {
  width: int
  scale: float = 2.0
}
weights {
  proj.weight: [width, width]
  unread proj.old: "an older copy"
}
block widen(x) {
  return x * scale
}
block run(x, P) {
  return widen(x @ P.weight^T) + offset()
}
block offset() {
  return 0.0
}
graph encode(x: f32[seq, width]) {
  output y = run(x, proj)
}
)";

struct Made {
  Result<Template> t = error("unparsed");
  Result<Instance> inst = error("uninstantiated");
};

Made make(const std::string& top, json config, std::vector<std::string> tensors) {
  arch::testing::TempDir dir;
  arch::testing::write_file(dir / "tower.arch", kTower);
  arch::testing::write_file(dir / "top.arch", top);
  Made m;
  m.t = parse_template_file(dir / "top.arch");
  if (!m.t.ok()) return m;
  InstantiateOptions opt;
  opt.config = std::move(config);
  opt.tensor_exists = [tensors](const std::string& n) { return std::find(tensors.begin(), tensors.end(), n) != tensors.end(); };
  m.inst = instantiate(*m.t, opt, op_table());
  return m;
}

const char* kTop = R"(family Top
import "tower.arch" as tower(config: tower_config, weights: model.tower)
config {
  width: int = tower.width * 2
}
flags {
  has_tower = exists(tower.proj.weight)
}
graph step(x: f32[seq, tower.width]) {
  output y = tower.run(x, tower.proj)
  output wide = tower.widen(x)
}
)";

TEST(Namespace, ItsFieldsComeFromTheSubConfigAndItsWeightsFromThePrefix) {
  Made m = make(kTop, {{"tower_config", {{"width", 4}, {"scale", 3.0}}}}, {"model.tower.proj.weight"});
  ASSERT_TRUE(m.t.ok()) << m.t.error().message;
  ASSERT_TRUE(m.inst.ok()) << m.inst.error().message;
  const Instance& in = *m.inst;
  auto field = [&](const std::string& name) {
    for (const auto& [k, v] : in.config)
      if (k == name) return v.to_json();
    return json();
  };
  EXPECT_EQ(field("tower.width"), 4);
  EXPECT_EQ(field("tower.scale"), 3.0);
  EXPECT_EQ(field("width"), 8);  // the importing file's own, from the namespace's
  bool has_tower = false;
  for (const auto& [k, v] : in.flags)
    if (k == "has_tower") has_tower = v;
  EXPECT_TRUE(has_tower);  // exists() asks by the prefixed name
  ASSERT_EQ(in.graph.weights.size(), 1u);
  EXPECT_EQ(in.graph.weights[0].tensor, "model.tower.proj.weight");
  const auto& w = in.graph.values[size_t(in.graph.weights[0].value)].type.shape;
  EXPECT_EQ(w, (Shape{Dim::of(4), Dim::of(4)}));
  // The graph's input dim is the namespace's field.
  EXPECT_EQ(in.graph.values[size_t(in.graph.inputs[0])].type.shape[1], Dim::of(4));
}

TEST(Namespace, TheImportingFileRedefinesItsBlocksInItsOwnNames) {
  const std::string top = std::string(kTop).replace(std::string(kTop).find("graph step"), 0,
                                                    "block tower.offset() {\n  return width * 1.0\n}\n");
  Made m = make(top, {{"tower_config", {{"width", 4}}}}, {"model.tower.proj.weight"});
  ASSERT_TRUE(m.inst.ok()) << m.inst.error().message;
  // tower.run adds offset(): now the importing file's, reading its own width (8).
  bool found = false;
  for (const auto& n : m.inst->graph.nodes)
    if (n.op == "constant" && n.attrs.value("value", 0.0) == 8.0) found = true;
  EXPECT_TRUE(found);
  EXPECT_TRUE(check_template(*m.t, op_table()).empty());
}

TEST(Namespace, MistakesAreNamed) {
  Made missing = make(kTop, {{"tower_config", {{"scale", 1.0}}}}, {});
  ASSERT_FALSE(missing.inst.ok());
  EXPECT_NE(first_line(missing.inst.error().message).find("config.json lacks 'width'"), std::string::npos)
      << missing.inst.error().message;

  Made not_object = make(kTop, {{"tower_config", 3}}, {});
  ASSERT_FALSE(not_object.inst.ok());
  EXPECT_NE(not_object.inst.error().message.find("'tower_config' (the config of namespace tower) is not an object"),
            std::string::npos)
      << not_object.inst.error().message;

  const std::string unknown_block = std::string(kTop).replace(std::string(kTop).find("tower.widen(x)"), 11, "tower.wide");
  Made no_block = make(unknown_block, {{"tower_config", {{"width", 4}}}}, {"model.tower.proj.weight"});
  ASSERT_TRUE(no_block.t.ok());
  ASSERT_FALSE(no_block.inst.ok());
  EXPECT_NE(no_block.inst.error().message.find("namespace tower has no block 'wide'"), std::string::npos)
      << no_block.inst.error().message;
  auto lint = check_template(*no_block.t, op_table());
  ASSERT_EQ(lint.size(), 1u);
  EXPECT_NE(lint[0].message.find("namespace tower has no block 'wide'"), std::string::npos) << lint[0].message;

  const std::string no_space = std::string(kTop).replace(std::string(kTop).find("tower.widen(x)"), 11, "towel.widen");
  Made bad = make(no_space, {{"tower_config", {{"width", 4}}}}, {"model.tower.proj.weight"});
  ASSERT_FALSE(bad.inst.ok());
  EXPECT_NE(bad.inst.error().message.find("'towel' is no namespace this template imports (did you mean 'tower'?)"),
            std::string::npos)
      << bad.inst.error().message;
}

// Its flags are set as `--flag tower.NAME`; its `unread` notes hold under
// its prefix; a namespace that is not there is refused by name.
TEST(Namespace, FlagsAndUnreadNotesAreItsOwn) {
  arch::testing::TempDir dir;
  arch::testing::write_file(dir / "tower.arch", std::string(kTower) + "flags {\n  big = true\n}\n");
  arch::testing::write_file(dir / "top.arch", kTop);
  auto t = parse_template_file(dir / "top.arch");
  ASSERT_TRUE(t.ok()) << t.error().message;
  const auto unread = all_unread(*t);
  ASSERT_EQ(unread.size(), 1u);
  EXPECT_EQ(path_str(unread[0].pattern), "model.tower.proj.old");
  InstantiateOptions opt;
  opt.config = {{"tower_config", {{"width", 4}}}};
  opt.flag_overrides = {{"tower.big", false}};
  auto inst = instantiate(*t, opt, op_table());
  ASSERT_TRUE(inst.ok()) << inst.error().message;
  bool big = true;
  for (const auto& [k, v] : inst->flags)
    if (k == "tower.big") big = v;
  EXPECT_FALSE(big);
  opt.flag_overrides = {{"towr.big", false}};
  auto bad = instantiate(*t, opt, op_table());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("--flag towr.big: the template imports no namespace 'towr'"), std::string::npos)
      << bad.error().message;
}

TEST(Namespace, TheImportIsWrittenInFull) {
  EXPECT_NE(testing::parse_error("family T\nimport \"a.arch\" as a\n").find("expected '(config: FIELD, weights: PREFIX)'"),
            std::string::npos);
  EXPECT_NE(testing::parse_error("family T\nimport \"a.arch\" as a(config: c)\n").find("expected ', weights:'"),
            std::string::npos);
}

}  // namespace
}  // namespace arch::dsl

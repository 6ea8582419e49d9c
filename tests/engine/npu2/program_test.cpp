// The program's text: written and read back unchanged; a broken program
// is an error naming the file, the line and the field.
#include <gtest/gtest.h>

#include <tuple>

#include "engine/npu2/program.h"

namespace arch::npu2 {
namespace {

Program small() {
  Program p;
  p.family = "LlamaStyle";
  p.template_file = "llama.arch";
  p.graph = "step";
  p.profile = "llama.npu2.yaml";
  p.max_context = 16;
  p.numerics = {{"weights", "bf16"}, {"check", {{"rel", 0.015625}, {"abs", 0.001}}}};
  p.versions = {{"decode", 1}, {"prompt", 8}};
  p.buffers = {{"residual", "f32", 4}, {"normed", "bf16", 4}, {"qkv", "bf16", 12}};
  p.caches = {{0, 1, 4, 16, "bf16"}};
  Unit u = unit("matvec", "layers.0.attention");
  u.at = "llama.arch:113";
  u.reads = {{"normed"}};
  u.writes = {{"qkv", 0, 4}, {"qkv", 4, 8}, {"qkv", 8, 12}};
  u.constants = {Constant{"weight", {{"q.weight", 0, 4}, {"k.weight", 0, 4}, {"v.weight", 0, 4}}, {12, 4}, "bf16"}};
  u.attrs = {{"role", "qkv"}, {"eps", 1e-6}, {"theta", 10000.0}, {"name", "123"}};
  u.values = {"q", "k", "v"};
  u.ops = {"q = matmul", "k = matmul", "v = matmul"};
  p.units = {u};
  return p;
}

// `text` with its first `from` replaced by `to`, read: the error it gives ("" where it reads).
std::string refusal(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos) return "(the text has no '" + from + "')";
  text.replace(at, from.size(), to);
  auto r = parse_program(text, "p.yaml");
  return r.ok() ? std::string() : r.error().message;
}

TEST(Npu2Program, ReadsBackWhatItWrote) {
  const std::string text = program_yaml(small());
  auto back = parse_program(text, "p.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(program_yaml(*back), text);
  const Unit& u = back->units.at(0);
  EXPECT_EQ(u.writes.at(1).begin, 4);
  EXPECT_EQ(u.writes.at(1).end, 8);
  EXPECT_EQ(u.constants.at(0).parts.at(2).tensor, "v.weight");
  EXPECT_EQ(u.attrs["theta"].get<double>(), 10000.0);
  EXPECT_TRUE(u.attrs["name"].is_string()) << "a quoted number stays a string";
  EXPECT_EQ(back->chunk_of("prompt"), 8);
}

TEST(Npu2Program, ErrorsNameTheLineAndTheField) {
  std::string text = program_yaml(small());
  auto bad_buffer = text;
  bad_buffer.replace(bad_buffer.find("reads: [normed]"), 15, "reads: [nowhere]");
  auto r = parse_program(bad_buffer, "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("p.yaml:"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("buffer 'nowhere' is not declared"), std::string::npos) << r.error().message;

  auto no_units = text.substr(0, text.find("units:"));
  r = parse_program(no_units, "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'units' is missing"), std::string::npos) << r.error().message;

  r = parse_program("target: npu2\n  bad: [", "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("not YAML"), std::string::npos) << r.error().message;

  auto other = text;
  other.replace(other.find("target: npu2"), 12, "target: gpu9");
  r = parse_program(other, "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("target 'gpu9' is not npu2"), std::string::npos);
}

// What a program file says is bounded before the emulator uses it: no
// attribute that is not a finite number, no offset that is not, no unit
// reading a layer's cache that is not listed; the window and the offset
// read back as written.
TEST(Npu2Program, NumbersAndLayersAreCheckedWhenRead) {
  Program p = small();
  p.caches[0].window = 8;
  p.units[0].constants[0].offset = 1.0;
  const std::string text = program_yaml(p);
  auto back = parse_program(text, "p.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->caches[0].window, 8);
  EXPECT_EQ(back->units[0].constants[0].offset, 1.0);

  for (const auto& [from, to, phrase] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"theta: 10000.0", "theta: .nan", "attribute 'theta' is not a finite number"},
           {"offset: 1.0", "offset: .inf", "offset must be a finite number"},
           {"role: \"qkv\"", "role: 3", "attribute 'role' must be a string"},
           {"eps: 1e-06", "eps: [1, .nan]", "attribute 'eps' holds something not a finite number"}}) {
    const std::string why = refusal(text, from, to);
    EXPECT_NE(why.find(phrase), std::string::npos) << from << " -> " << to << ": " << (why.empty() ? "(read)" : why);
  }

  Program a = small();
  Unit att = unit("attention", "layers.0.attention");
  att.reads = {{"normed"}};
  att.writes = {{"normed"}};
  att.attrs = {{"layer", 3}};
  a.units.push_back(att);
  auto r = parse_program(program_yaml(a), "p.yaml");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("layer 3 has no cache (1 listed)"), std::string::npos) << r.error().message;

  // A recurrent unit's state is a listed one of its kind; a state's shape fits its kind.
  Program d = small();
  d.states = {State{0, "recurrent", {2, 4, 4}, "f32"}};
  Unit conv = unit("conv", "layers.0.delta_net");
  conv.reads = {{"normed"}};
  conv.writes = {{"normed"}};
  conv.attrs = {{"state", 0}, {"activation", "silu"}};
  d.units.push_back(conv);
  const std::string dt = program_yaml(d);
  EXPECT_NE(refusal(dt, "state: 0", "state: 0").find("state 0 is not a listed conv state"), std::string::npos);
  EXPECT_NE(refusal(dt, "kind: recurrent, shape: [2, 4, 4]", "kind: recurrent, shape: [2, 4]").find("a state is conv"), std::string::npos);
  EXPECT_NE(refusal(dt, "dtype: f32}", "dtype: f16}").find("a state's dtype is bf16 or f32"), std::string::npos);
}

}  // namespace
}  // namespace arch::npu2

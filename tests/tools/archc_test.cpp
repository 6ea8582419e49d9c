// archc from the command line: the families lint clean, a mistake is
// reported at its line and column, and dump prints the IR.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "tests/shared_data.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

TEST(Archc, FamiliesCheckClean) {
  auto r = run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("no problems"), std::string::npos) << r.out;
}

// A copy of llama.arch with one deliberate mistake is reported where it is.
TEST(Archc, MistakeReportedAtLineAndColumn) {
  std::ifstream in(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::string good = "q = rope(q, positions, theta: theta";
  size_t at = text.find(good);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, good.size(), "q = rope(q, positions, thetta: theta");
  int line = 1 + int(std::count(text.begin(), text.begin() + long(at), '\n'));
  int col = int(at - text.rfind('\n', at)) + int(std::string("q = rope(q, positions, ").size());
  fs::path bad = fs::temp_directory_path() / "archc_test_bad.arch";
  std::ofstream(bad) << text;
  auto r = run_tool(testing::archc() + " --check " + bad.string());
  EXPECT_EQ(r.exit_code, 1);
  std::string want = bad.string() + ":" + std::to_string(line) + ":" + std::to_string(col) +
                     ": error: rope() has no attribute 'thetta' (did you mean 'theta'?)";
  EXPECT_NE(r.out.find(want), std::string::npos) << "want: " << want << "\ngot: " << r.out;
  fs::remove(bad);
}

TEST(Archc, SyntaxErrorReportedAtLineAndColumn) {
  fs::path bad = fs::temp_directory_path() / "archc_test_syntax.arch";
  std::ofstream(bad) << "family X\nconfig {\n  hidden_size int\n}\n";
  auto r = run_tool(testing::archc() + " --check " + bad.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find(bad.string() + ":3:15: error: expected ':' and a type after the config field's name"),
            std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("grammar::"), std::string::npos) << "a C++ rule name leaked: " << r.out;
  fs::remove(bad);
}

TEST(Archc, DumpPrintsNamedIr) {
  std::string cfg = testing::golden_dir("llama") + "/config.json";
  ARCH_REQUIRE_SHARED(cfg);
  auto r = run_tool(testing::archc() + " dump " ARCHETYPE_SOURCE_DIR "/families/llama.arch --config " + cfg);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("layers.1.norm = rms_norm(layers.0.h, model.layers.1.input_layernorm.weight) "
                       "{\"eps\":1e-05} : f32[seq, 64]"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("output logits = logits"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(Archc, GraphDrawsOneClusterPerLayerWithCheckpointNames) {
  std::string model = testing::golden_dir("qwen2");
  ARCH_REQUIRE_SHARED(model);
  auto r = testing::run_tool(testing::archc() + " graph " ARCHETYPE_SOURCE_DIR "/families/llama.arch --model " + model);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("digraph \"LlamaStyle step\" {", 0), 0u) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("subgraph \"cluster_layers.0\""), std::string::npos);
  EXPECT_NE(r.out.find("subgraph \"cluster_layers.1\""), std::string::npos);
  EXPECT_EQ(r.out.find("subgraph \"cluster_layers.2\""), std::string::npos);
  EXPECT_NE(r.out.find("label=\"model.layers.1.self_attn.q_proj.bias\""), std::string::npos);
  EXPECT_NE(r.out.find("[label=\"logits\", shape=house]"), std::string::npos);
  // Deterministic.
  EXPECT_EQ(testing::run_tool(testing::archc() + " graph " ARCHETYPE_SOURCE_DIR "/families/llama.arch --model " + model).out,
            r.out);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// A norm offset changed on one line is found at the right value and layer.
TEST(Archc, DiffFindsAOneLineChangeWhereItIs) {
  std::string model = testing::golden_dir("gemma");
  ARCH_REQUIRE_SHARED(model);
  fs::path dir = fs::temp_directory_path() / ("archc_diff_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::copy_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch", dir / "llama.arch");
  std::ifstream in(ARCHETYPE_SOURCE_DIR "/families/gemma.arch");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir / "old.arch") << text;
  std::string good = "{ w = w + 1 }";
  size_t at = text.find(good);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, good.size(), "{ w = w + 1.5 }");
  std::ofstream(dir / "new.arch") << text;
  auto r = testing::run_tool(testing::archc() + " diff " + (dir / "old.arch").string() + " " +
                             (dir / "new.arch").string() + " --model " + model + " --json --html " +
                             (dir / "d.html").string());
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  // The changed constant itself, in the first norm of layer 0.
  EXPECT_EQ(j["first_beyond_tolerance"], "layers.0.norm.w.constant") << r.out.substr(0, 2000);
  bool saw = false;
  for (const auto& c : j["structure"]) saw = saw || c["detail"].get<std::string>().find("1.5") != std::string::npos;
  EXPECT_TRUE(saw) << j["structure"].dump();
  EXPECT_LT(j["greedy"]["agree"].get<int>(), 16);
  EXPECT_TRUE(fs::file_size(dir / "d.html") > 500);
  fs::remove_all(dir);
}

TEST(Archc, DiffOfATemplateWithItselfIsEmpty) {
  std::string model = testing::golden_dir("qwen3");
  ARCH_REQUIRE_SHARED(model);
  auto r = testing::run_tool(testing::archc() + " diff " ARCHETYPE_SOURCE_DIR "/families/llama.arch " ARCHETYPE_SOURCE_DIR
                             "/families/llama.arch --model " + model + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["structure"].empty());
  EXPECT_TRUE(j["first_beyond_tolerance"].is_null());
  EXPECT_EQ(j["greedy"]["agree"], 16);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(Archc, CheckAgainstACheckpointFindsConventionAndBindingProblems) {
  std::string gemma = testing::golden_dir("gemma"), llama = testing::golden_dir("llama");
  ARCH_REQUIRE_SHARED(llama);
  ARCH_REQUIRE_SHARED(gemma);
  // Its own family: clean.
  auto ok = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/gemma.arch --model " + gemma);
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  EXPECT_EQ(ok.out.find("warning"), std::string::npos) << ok.out;
  // Gemma's w - 1 norm weights read by LlamaStyle as w: a warning at the norm's line.
  auto conv = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/llama.arch --model " + gemma);
  EXPECT_NE(conv.out.find("families/llama.arch:"), std::string::npos) << conv.out;
  EXPECT_NE(conv.out.find("warning: model.norm.weight averages"), std::string::npos) << conv.out;
  EXPECT_NE(conv.out.find("is it stored as w - 1?"), std::string::npos) << conv.out;
  // LlamaStyle on a Gemma 2 checkpoint: the norms it has that nothing reads.
  auto extra = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/llama.arch --model " +
                                 testing::golden_dir("gemma2"));
  EXPECT_NE(extra.out.find("warning: checkpoint tensor model.layers.0.pre_feedforward_layernorm.weight is read by nothing"),
            std::string::npos) << extra.out;
  // A checkpoint lacking what the template reads: an error at the declaration.
  auto lacks = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/bert.arch --model " + llama);
  EXPECT_EQ(lacks.exit_code, 1) << lacks.out;
}

TEST(ArchcCheck, WhatTheTemplateSaysItLeavesUnreadIsANoteNotAWarning) {
  const std::string vits = testing::golden_dir("vits");
  ARCH_REQUIRE_SHARED(vits);
  auto r = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/vits.arch --model " + vits);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: 16 tensors under posterior_encoder are read by nothing: the posterior encoder"),
            std::string::npos)
      << r.out;
}

// A vision-language template reads the tower, the projector and the text
// model in their own names; what it leaves unread its `unread` explains
// (LLaVA's layers past vision_feature_layer): notes, not warnings.
TEST(ArchcCheck, AVisionLanguageTemplateReadsItsNamespacesWeights) {
  const std::string gemma = testing::golden_dir("gemma3_vlm");
  const std::string llava = testing::golden_dir("llava");
  ARCH_REQUIRE_SHARED(gemma);
  auto r = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/gemma3_vlm.arch --model " + gemma);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("read by nothing"), std::string::npos) << r.out;
  r = testing::run_tool(testing::archc() + " --check " ARCHETYPE_SOURCE_DIR "/families/llava.arch --model " + llava);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("warning"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("16 tensors under vision_tower.vision_model.encoder.layers are read by nothing"), std::string::npos)
      << r.out;
}

}  // namespace
}  // namespace arch

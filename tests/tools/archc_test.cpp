// archc from the command line: the families lint clean, a mistake is
// reported at its line and column, and dump prints the IR.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

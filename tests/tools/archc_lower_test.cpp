// archc lower and archrun generate on the NPU2 engine's terms, from the
// command line: a program as text, a planted template change showing in
// its diff, refusals named with a non-zero exit, and the emulated tokens
// equal to the host reference's under the same numerics.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/shared_data.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::run_tool;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

TEST(ArchcLower, APlantedTemplateChangeShowsInTheProgramsDiff) {
  const std::string model = testing::golden_dir("llama");
  ARCH_REQUIRE_SHARED(model);
  fs::path dir = fs::temp_directory_path() / ("archc_lower_" + std::to_string(getpid()));
  fs::create_directories(dir / "old");
  fs::create_directories(dir / "new");
  std::string text = read_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
  for (const char* v : {"old", "new"}) fs::copy_file(ARCHETYPE_SOURCE_DIR "/families/llama.npu2.yaml", dir / v / "llama.npu2.yaml");
  std::ofstream(dir / "old" / "llama.arch") << text;
  // The planted change: the gate and up projections swap roles.
  const std::string good = "out = (activation(gate) * up) @ P.down_proj.weight^T";
  ASSERT_NE(text.find(good), std::string::npos);
  text.replace(text.find(good), good.size(), "out = (activation(up) * gate) @ P.down_proj.weight^T");
  std::ofstream(dir / "new" / "llama.arch") << text;
  for (const char* v : {"old", "new"}) {
    auto r = run_tool(testing::archc() + " lower --target npu2 " + model + " --template " + (dir / v / "llama.arch").string() +
                      " -o " + (dir / (std::string(v) + ".yaml")).string());
    ASSERT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("units"), std::string::npos) << r.out;
  }
  const std::string old_text = read_file(dir / "old.yaml"), new_text = read_file(dir / "new.yaml");
  EXPECT_NE(old_text.find("kind: swiglu"), std::string::npos);
  auto d = run_tool("diff " + (dir / "old.yaml").string() + " " + (dir / "new.yaml").string());
  EXPECT_EQ(d.exit_code, 1) << "the programs should differ";
  // The merged gate/up matrix now starts with the up projection's rows.
  EXPECT_NE(d.out.find("> "), std::string::npos);
  EXPECT_NE(d.out.find(">     ops: [layers.0.swiglu.up = matmul, layers.0.swiglu.gate = matmul]"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("template:"), std::string::npos) << "the template's file name, not its directory";
  // Lowering is stable: the same template gives the same text.
  auto again = run_tool(testing::archc() + " lower " + model + " --template " + (dir / "old" / "llama.arch").string());
  ASSERT_EQ(again.exit_code, 0);
  EXPECT_EQ(again.out, old_text);
  fs::remove_all(dir);
}

TEST(ArchcLower, RefusesByNameWithANonZeroExit) {
  const std::string model = testing::golden_dir("deepseek_v3");
  ARCH_REQUIRE_SHARED(model);
  auto r = run_tool(testing::archc() + " lower --target npu2 " + model);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("the NPU2 engine has no unit for"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("latent attention (DeepSeek's MLA)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("experts: the experts are not chosen as the top k"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deepseek.arch:"), std::string::npos) << r.out;
  auto j = run_tool(testing::archc() + " lower " + model + " --json");
  EXPECT_EQ(j.exit_code, 1);
  auto parsed = nlohmann::json::parse(j.out.substr(j.out.find('{'), j.out.rfind('}') + 1 - j.out.find('{')), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.out;
  EXPECT_GE(parsed["refused"].size(), 2u);
}

TEST(ArchrunNpu2, EmulatorAndHostReferenceDrawTheSameTokens) {
  const std::string model = testing::golden_dir("qwen3");
  ARCH_REQUIRE_SHARED(model);
  const std::string ids = " --ids 5,99,301,7,42,250 -n 12 --json";
  auto emu = run_tool(testing::archrun() + " generate " + model + ids + " --backend npu2 --chunk 4 --check");
  ASSERT_EQ(emu.exit_code, 0) << emu.out;
  auto host = run_tool(testing::archrun() + " generate " + model + ids + " --path reference --numerics npu2");
  ASSERT_EQ(host.exit_code, 0) << host.out;
  auto a = nlohmann::json::parse(testing::last_line(emu.out)), b = nlohmann::json::parse(testing::last_line(host.out));
  EXPECT_EQ(a["tokens"], b["tokens"]);
  EXPECT_EQ(a["tokens"].size(), 12u);
  EXPECT_NE(emu.out.find("bounded per call"), std::string::npos) << emu.out;
  EXPECT_NE(emu.out.find("0 failed"), std::string::npos) << emu.out;
  // The numerics need the reference path, and the engine draws greedily.
  EXPECT_NE(run_tool(testing::archrun() + " generate " + model + ids + " --numerics npu2").exit_code, 0);
  EXPECT_NE(run_tool(testing::archrun() + " generate " + model + ids + " --backend npu2 --temperature 0.7").exit_code, 0);
}

}  // namespace
}  // namespace arch

// archrun on SD3 and Flux pipeline folders (built from the component
// goldens, tests/golden/mmdit_pipelines.h): info names every component,
// imagine writes a PNG from each encoder's ids, and what a pipeline kind
// does not take is refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "tests/golden/mmdit_pipelines.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

TEST(ArchrunMmdit, Sd3AndFluxFoldersToPngs) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd3"));
  const fs::path root = fs::temp_directory_path() / ("archrun_mmdit_" + std::to_string(getpid()));
  fs::remove_all(root);
  testing::make_sd3_pipeline(root / "sd3");
  testing::make_flux_pipeline(root / "flux");
  const std::string png = (root / "out.png").string();
  auto info = testing::run_tool(testing::archrun() + " info " + (root / "sd3").string());
  ASSERT_EQ(info.exit_code, 0) << info.out;
  for (const char* f : {"StableDiffusion3Pipeline", "text_encoder_3", "T5EncoderStyle", "transformer", "MMDiT"})
    EXPECT_NE(info.out.find(f), std::string::npos) << f << "\n" << info.out;
  auto sd3 = testing::run_tool(testing::archrun() + " imagine " + (root / "sd3").string() +
                               " --ids 0,5,9,2,1,1,1,1 --ids-3 13,44,1 --negative-ids 0,2,1,1,1,1,1,1 --negative-ids-3 1"
                               " --steps 2 --guidance 5 -o " + png);
  ASSERT_EQ(sd3.exit_code, 0) << sd3.out;
  EXPECT_EQ(testing::read_file(png).substr(1, 3), "PNG");
  auto flux = testing::run_tool(testing::archrun() + " imagine " + (root / "flux").string() +
                                " --ids 0,5,9,2,1,1 --ids-2 13,44,1,0 --steps 2 --guidance 3.5 --height 32 --width 32 -o " + png);
  ASSERT_EQ(flux.exit_code, 0) << flux.out;
  auto negative = testing::run_tool(testing::archrun() + " imagine " + (root / "flux").string() +
                                    " --ids 0,5 --ids-2 13,1 --negative-ids 0,2 --height 32 --width 32 -o " + png);
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_NE(negative.out.find("no negative prompt"), std::string::npos) << negative.out;
  auto third = testing::run_tool(testing::archrun() + " imagine " + (root / "flux").string() +
                                 " --ids 0,5 --ids-3 13,1 --height 32 --width 32 -o " + png);
  EXPECT_NE(third.exit_code, 0);
  EXPECT_NE(third.out.find("--ids-3"), std::string::npos) << third.out;
  auto odd = testing::run_tool(testing::archrun() + " imagine " + (root / "flux").string() +
                               " --ids 0,5 --ids-2 13,1 --height 34 --width 32 -o " + png);
  EXPECT_NE(odd.exit_code, 0);
  EXPECT_NE(odd.out.find("2x2 patches"), std::string::npos) << odd.out;
  fs::remove_all(root);
}

// archrun bench on Flux's transformer: its latents through its pack graph
// at 1024x1024 (128x128 latents: 4,096 packed tokens), their GFLOP counted.
TEST(ArchrunMmdit, BenchPacksFluxsLatents) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("flux"));
  auto r = testing::run_tool(testing::archrun() + " bench " + testing::golden_dir("flux") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out.substr(r.out.find('{')));
  EXPECT_NE(j["inputs"].get<std::string>().find("hidden_states [4096, 16]"), std::string::npos) << j.dump();
  EXPECT_NE(j["inputs"].get<std::string>().find("img_ids [4096, 3]"), std::string::npos) << j.dump();
  EXPECT_GT(j["gflop"].get<double>(), 0.1);
}

}  // namespace
}  // namespace arch

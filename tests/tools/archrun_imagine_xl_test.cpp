// archrun imagine on an SDXL pipeline folder (the sdxl_pipeline golden):
// ids for both encoders and the size conditioning from the command line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/engine/runtime/golden_variant.h"
#include "tests/golden/golden_case.h"
#include "tests/tools/run_tool.h"
#include "importer/checkpoint/safetensors.h"

namespace arch {
namespace {

using testing::run_tool;

// archrun imagine on the SDXL pipeline folder, from ids and the size
// conditioning on the command line: the saved image is the golden's; the
// SDXL-only options refused on an SD 1.5 folder.
TEST(ArchrunImagineXl, TheGoldensImageFromTheCommandLine) {
  const std::string dir = testing::golden_dir("sdxl_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  auto in = read_safetensors(dir + "/inputs.safetensors");
  ASSERT_TRUE(in.ok());
  testing::GoldenVariant scratch("unet_sd15", "imagine_xl", nlohmann::json::object());
  const std::string latents = (scratch.dir / "latents.safetensors").string(), png = (scratch.dir / "out.png").string(),
                    saved = (scratch.dir / "saved.safetensors").string();
  ASSERT_TRUE(write_safetensors(latents, {{"latents", in->tensors.at("latents")}}).ok());
  auto ids = [&](const char* name) {
    std::string list;
    for (auto id : testing::read_json(dir + "/inputs.json")[name].get<std::vector<int64_t>>())
      list += (list.empty() ? "" : ",") + std::to_string(id);
    return list;
  };
  auto r = run_tool(testing::archrun() + " imagine " + dir + " --ids " + ids("prompt_input_ids") + " --ids-2 " +
                    ids("prompt_input_ids_2") + " --steps 4 --guidance 5 --original-size 48,40 --crop-top-left 4,0 --latents " +
                    latents + " -o " + png + " --save-tensors " + saved);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  auto got = read_safetensors(saved);
  ASSERT_TRUE(got.ok()) << got.error().message;
  auto want = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(want.ok());
  const Tensor &g = got->tensors.at("image"), &w = want->tensors.at("image");
  ASSERT_EQ(g.numel(), w.numel());
  auto c = testing::compare_f32(g.f32(), w.f32(), w.numel());
  EXPECT_TRUE(c.ok()) << "image differs by " << c.max_abs << " (allowed " << c.bound << ")";
  auto sd15 = run_tool(testing::archrun() + " imagine " + testing::golden_dir("sd15_pipeline") + " --ids 98,99 --ids-2 98,99 -o " + png);
  EXPECT_NE(sd15.exit_code, 0);
  EXPECT_NE(sd15.out.find("are for a second text encoder"), std::string::npos) << sd15.out;
  auto half = run_tool(testing::archrun() + " imagine " + dir + " --ids 98,99 --negative-ids-2 98,99 -o " + png);
  EXPECT_NE(half.exit_code, 0);
  EXPECT_NE(half.out.find("give --negative-ids too"), std::string::npos) << half.out;
  auto bad = run_tool(testing::archrun() + " imagine " + dir + " --ids 98,99 --original-size 48 -o " + png);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.out.find("--original-size must be two integers, as 48,40, not '48'"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace arch

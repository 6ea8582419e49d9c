// archrun imagine --scheduler: every sampler makes an image from the
// command line; an ancestral sampler's added noise follows --seed (the
// same seed, the same PNG; another seed, another), a deterministic one's
// does not.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <string>

#include <unistd.h>

#include "engine/runtime/scheduler.h"
#include "importer/image/image_write.h"
#include "tests/golden/inpainting_pipeline.h"
#include "tests/shared_data.h"
#include "tests/test_files.h"
#include "tests/tools/run_tool.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

TEST(ArchrunSamplers, EveryOneMakesAnImageAndAncestralNoiseFollowsTheSeed) {
  const std::string pipe = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(pipe);
  const fs::path dir = fs::temp_directory_path() / ("samplers_" + std::to_string(getpid()));
  fs::create_directories(dir);
  // Fixed initial latents [4, 16, 16], so that --seed moves only the noise
  // a sampler adds as it steps.
  std::string data(4 * 16 * 16 * sizeof(float), '\0');
  for (size_t i = 0; i < data.size() / sizeof(float); ++i) {
    const float v = float(int(i % 7) - 3) * 0.25f;
    std::memcpy(&data[i * sizeof(float)], &v, sizeof v);
  }
  const std::string latents = (dir / "latents.safetensors").string();
  std::ofstream(latents, std::ios::binary) << testing::safetensors_bytes(
      R"({"latents":{"dtype":"F32","shape":[4,16,16],"data_offsets":[0,4096]}})", data);
  auto run = [&](const std::string& scheduler, int seed, const std::string& name) {
    const std::string png = (dir / name).string();
    auto r = testing::run_tool(testing::archrun() + " imagine " + pipe +
                               " --ids 98,18,80,16,93,12,59,99,99,99,99,99,99,99,99,99"
                               " --negative-ids 98,99,99,99,99,99,99,99,99,99,99,99,99,99,99,99 --steps 4 --latents " +
                               latents + " --scheduler " + scheduler + " --seed " + std::to_string(seed) + " -o " + png);
    EXPECT_EQ(r.exit_code, 0) << scheduler << ": " << r.out;
    EXPECT_NE(r.out.find("sampled by " + scheduler), std::string::npos) << r.out;
    return testing::read_file(png);
  };
  for (const auto& [name, cls] : scheduler_kinds()) {
    const std::string png = run(name, 1, name + ".png");
    EXPECT_EQ(png.substr(1, 3), "PNG") << name;
  }
  EXPECT_EQ(run("euler_a", 5, "a5.png"), run("euler_a", 5, "a5_again.png"));
  EXPECT_NE(run("euler_a", 5, "a5.png"), run("euler_a", 6, "a6.png"));
  EXPECT_NE(run("lcm", 5, "l5.png"), run("lcm", 6, "l6.png"));
  EXPECT_EQ(run("dpm++2m_karras", 5, "k5.png"), run("dpm++2m_karras", 6, "k6.png"));
  auto unknown = testing::run_tool(testing::archrun() + " imagine " + pipe + " --ids 98,99 --scheduler heun -o " +
                                   (dir / "x.png").string());
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.out.find("--scheduler"), std::string::npos) << unknown.out;
  fs::remove_all(dir);
}

// --init-image and --mask from the command line: the steps strength
// leaves, said; the image's own size taken; what does not fit refused.
TEST(ArchrunImageToImage, StrengthAndMaskFromTheCommandLine) {
  const std::string pipe = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(pipe);
  const fs::path dir = fs::temp_directory_path() / ("img2img_" + std::to_string(getpid()));
  fs::create_directories(dir);
  Tensor rgb = Tensor::zeros(DType::F32, {3, 24, 20}), mask = Tensor::zeros(DType::F32, {3, 24, 20});
  for (int64_t i = 0; i < rgb.numel(); ++i) rgb.f32()[i] = float((i * 7) % 11) / 10.0f;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 12; ++y)
      for (int64_t x = 0; x < 20; ++x) mask.f32()[(c * 24 + y) * 20 + x] = 1.0f;  // the top half anew
  const std::string image = (dir / "in.png").string(), mask_png = (dir / "mask.png").string();
  ASSERT_TRUE(write_png(image, rgb).ok());
  ASSERT_TRUE(write_png(mask_png, mask).ok());
  const std::string base = testing::archrun() + " imagine " + pipe + " --ids 98,18,80,99 --steps 10 --seed 2 --init-image " + image;
  const std::string out = (dir / "out.png").string();
  auto i2i = testing::run_tool(base + " --strength 0.3 -o " + out);
  ASSERT_EQ(i2i.exit_code, 0) << i2i.out;
  EXPECT_NE(i2i.out.find("3 steps of 10 from " + image), std::string::npos) << i2i.out;
  EXPECT_NE(i2i.out.find("24x20"), std::string::npos) << i2i.out;  // the image's own size
  auto inpaint = testing::run_tool(base + " --mask " + mask_png + " -o " + out);
  ASSERT_EQ(inpaint.exit_code, 0) << inpaint.out;
  EXPECT_NE(inpaint.out.find("10 steps of 10 from " + image + " inpainted by " + mask_png), std::string::npos) << inpaint.out;
  auto resized = testing::run_tool(base + " --height 16 --width 16 -o " + out);
  ASSERT_EQ(resized.exit_code, 0) << resized.out;
  EXPECT_NE(resized.out.find("16x16"), std::string::npos) << resized.out;
  auto weak = testing::run_tool(base + " --strength 0.05 -o " + out);
  EXPECT_NE(weak.exit_code, 0);
  EXPECT_NE(weak.out.find("leaves no step to run"), std::string::npos) << weak.out;
  auto alone = testing::run_tool(testing::archrun() + " imagine " + pipe + " --ids 98,99 --mask " + mask_png + " -o " + out);
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.out.find("go with --init-image"), std::string::npos) << alone.out;
  auto missing = testing::run_tool(base + "x -o " + out);
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.out.find(image + "x"), std::string::npos) << missing.out;
  fs::remove_all(dir);
}

// An inpainting UNet (in_channels 9) from the command line: the image and
// the mask make a PNG; text to image alone is refused by name, and so is
// the server, which takes neither.
TEST(ArchrunImageToImage, AnInpaintingUNetTakesTheImageAndTheMask) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd15_pipeline"));
  testing::InpaintingPipeline pipe([](int64_t i) { return float(i % 5) * 0.01f; });
  const fs::path dir = pipe.dir / "run";
  fs::create_directories(dir);
  Tensor rgb = Tensor::zeros(DType::F32, {3, 16, 24}), mask = Tensor::zeros(DType::F32, {3, 16, 24});
  for (int64_t i = 0; i < rgb.numel(); ++i) rgb.f32()[i] = float((i * 5) % 13) / 12.0f;
  for (int64_t i = 0; i < mask.numel(); ++i) mask.f32()[i] = i % 24 < 12 ? 1.0f : 0.0f;  // the left half anew
  const std::string image = (dir / "in.png").string(), mask_png = (dir / "mask.png").string(), out = (dir / "out.png").string();
  ASSERT_TRUE(write_png(image, rgb).ok());
  ASSERT_TRUE(write_png(mask_png, mask).ok());
  const std::string base = testing::archrun() + " imagine " + pipe.dir.string() + " --ids 98,18,80,99 --steps 4 --seed 3";
  auto r = testing::run_tool(base + " --init-image " + image + " --mask " + mask_png + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("4 steps of 4 from " + image + " inpainted by " + mask_png), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("16x24"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::file_size(out) > 0);
  auto alone = testing::run_tool(base + " -o " + out);
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.out.find("an inpainting UNet (in_channels 9) makes an image from one to start from and a mask"), std::string::npos)
      << alone.out;
  auto serve = testing::run_tool(testing::archrun() + " serve " + pipe.dir.string() + " --port 0");
  EXPECT_NE(serve.exit_code, 0);
  EXPECT_NE(serve.out.find("an inpainting UNet makes images from an image and a mask"), std::string::npos) << serve.out;
}

}  // namespace
}  // namespace arch

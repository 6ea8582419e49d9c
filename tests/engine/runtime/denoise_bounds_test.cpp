// The sampling loop's bounds: a guidance scale that would make the mix Inf
// (an all-black image), and a loop whose kept latents pass the limit
// 'latent_elements', refused before any of it is made.
#include "engine/runtime/denoise.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/shared_data.h"

namespace arch {
namespace {

TEST(DenoiseBounds, GuidanceIsANumberFromZeroToAHundred) {
  for (float g : {0.0f, 1.0f, 7.5f, 100.0f}) EXPECT_TRUE(check_guidance(g).ok()) << g;
  EXPECT_EQ(check_guidance(1e38f).error().message, "guidance is 1e+38: a guidance scale must be a number from 0 to 100");
  EXPECT_EQ(check_guidance(NAN, "--guidance").error().message,
            "--guidance is nan: a guidance scale must be a number from 0 to 100");
  EXPECT_FALSE(check_guidance(INFINITY).ok());
  EXPECT_FALSE(check_guidance(-1.0f).ok());
}

TEST(DenoiseBounds, WhatALoopKeepsIsCountedBeforeItIsMade) {
  EXPECT_TRUE(check_loop_size({4, 64, 64}, 50).ok());      // SD 1.5 at 512 px
  EXPECT_TRUE(check_loop_size({16, 128, 128}, 50).ok());   // Flux at 1024 px
  EXPECT_EQ(check_loop_size({4, 100000, 100000}, 20).error().message,
            "the latents a loop of 20 steps over [4, 100000, 100000] keeps (41 of them: the trajectory and the noise "
            "predictions), in elements (1640000000000) exceeds the limit 'latent_elements' (268435456); if this is "
            "meant, raise it with --limit latent_elements=N or ARCHETYPE_LIMITS=latent_elements=N");
  // Sizes whose product passes int64 stay the largest figure, never wrap.
  EXPECT_FALSE(check_loop_size({16, int64_t(1) << 31, int64_t(1) << 31}, 1 << 30).ok());
}

TEST(DenoiseBounds, TheLoopRefusesBeforeItRuns) {
  const std::string dir = testing::golden_dir("unet_sd15");
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto config = read_scheduler_config(dir);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto scheduler = make_scheduler(*config, dir);
  ASSERT_TRUE(scheduler.ok()) << scheduler.error().message;
  DenoiseOptions opt;
  opt.context = Tensor::zeros(DType::F32, {7, 48});
  opt.negative_context = opt.context;
  opt.guidance = 1e38f;
  const Tensor latents = Tensor::zeros(DType::F32, {4, 16, 16});
  EXPECT_EQ(denoise(**m, **scheduler, latents, opt).error().message,
            "guidance is 1e+38: a guidance scale must be a number from 0 to 100");
  opt.guidance = 7.5f;
  opt.steps = 100000000;
  EXPECT_NE(denoise(**m, **scheduler, latents, opt).error().message.find(
                "the latents a loop of 100000000 steps over [4, 16, 16] keeps (200000001 of them"),
            std::string::npos);
  opt.steps = 2;
  auto ok = denoise(**m, **scheduler, latents, opt);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->trajectory.shape, (Dims{3, 4, 16, 16}));
}

}  // namespace
}  // namespace arch

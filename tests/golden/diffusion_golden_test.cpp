// Diffusion denoisers through forward(): every per-block tensor diffusers'
// own modeling code stored in expected.safetensors, within the golden
// README's float32 rule, on both paths.
#include <gtest/gtest.h>

#include "importer/safetensors.h"
#include "runtime/denoise.h"
#include "runtime/model.h"
#include "tests/golden/golden_case.h"
#include "tooling/compare.h"

namespace arch {
namespace {

struct Case {
  const char* name;
  const char* family;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DiffusionGolden : public ::testing::TestWithParam<Case> {};

TEST_P(DiffusionGolden, EveryPerBlockTensorMatchesDiffusers) {
  const std::string dir = testing::golden_dir(GetParam().name);
  ARCH_REQUIRE_SHARED(dir);
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    LoadOptions lo;
    lo.backend = backend;
    auto model = load_model(dir, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->family, GetParam().family);
    auto r = compare_with_golden(**model, dir);
    ASSERT_TRUE(r.ok()) << r.error().message;
    // The sampling loop's tensors (ddim_*) are archrun denoise's, not forward's.
    for (const auto& name : r->missing)
      EXPECT_EQ(name.rfind("ddim_", 0), 0u) << GetParam().name << ": no output " << name;
    EXPECT_GE(r->tensors.size(), 4u);
    for (const auto& t : r->tensors)
      EXPECT_TRUE(t.ok()) << GetParam().name << ": " << t.name << " differs by " << t.max_abs << " (allowed " << t.bound << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffusionGolden, ::testing::Values(Case{"dit", "DiTDiffusion"}, Case{"unet_sd15", "UNetDiffusion"},
                                                            Case{"sd3", "MMDiT"}, Case{"flux", "Flux"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

namespace arch {
namespace {

Tensor first_tensor(const std::string& path, const std::string& name) {
  auto f = read_safetensors(path);
  EXPECT_TRUE(f.ok()) << path;
  return f.ok() && f->tensors.count(name) ? f->tensors.at(name) : Tensor{};
}

// The unet_sd15 golden's four DDIM steps (751, 501, 251, 1), without and
// with classifier-free guidance 7.5: every step's latents and noise
// prediction.
TEST(DdimGolden, TheTrajectoryMatchesDiffusersStepByStep) {
  const std::string dir = testing::golden_dir("unet_sd15");
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto config = read_scheduler_config(dir);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto scheduler = DdimScheduler::from_config(*config, "scheduler_config.json");
  ASSERT_TRUE(scheduler.ok()) << scheduler.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor latents = first_tensor(dir + "/sampling_inputs.safetensors", "ddim_initial_latents");
  for (bool guided : {false, true}) {
    SCOPED_TRACE(guided ? "guided" : "unguided");
    DenoiseOptions opt;
    opt.steps = 4;
    opt.context = first_tensor(dir + "/inputs.safetensors", "encoder_hidden_states");
    if (guided) {
      opt.guidance = 7.5f;
      opt.negative_context = first_tensor(dir + "/sampling_inputs.safetensors", "negative_encoder_hidden_states");
    }
    auto r = denoise(**model, *scheduler, latents, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->timesteps, (std::vector<int>{751, 501, 251, 1}));
    const Tensor& want = expected->tensors.at(guided ? "ddim_cfg_latents" : "ddim_latents");
    const Tensor& want_eps = expected->tensors.at(guided ? "ddim_cfg_noise_pred" : "ddim_noise_pred");
    ASSERT_EQ(r->trajectory.numel(), want.numel());
    const int64_t per = want.numel() / 5;
    for (int64_t k = 0; k < 5; ++k) {
      auto c = testing::compare_f32(r->trajectory.f32() + k * per, want.f32() + k * per, per);
      EXPECT_TRUE(c.ok()) << "latents after step " << k << " differ by " << c.max_abs << " (allowed " << c.bound << ")";
      if (k < 4) {
        auto e = testing::compare_f32(r->noise_preds.f32() + k * per, want_eps.f32() + k * per, per);
        EXPECT_TRUE(e.ok()) << "noise prediction of step " << k + 1 << " differs by " << e.max_abs;
      }
    }
  }
}

}  // namespace
}  // namespace arch

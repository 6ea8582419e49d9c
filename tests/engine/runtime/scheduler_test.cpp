// The schedulers' timesteps, sigmas and steps against diffusers' formulas
// (numbers worked out apart from the code, in float32 as torch does).
#include <gtest/gtest.h>

#include "engine/runtime/scheduler.h"

namespace arch {
namespace {

// Stable Diffusion 1.5's noise schedule (its scheduler/ config).
nlohmann::json sd15(const char* cls) {
  return {{"_class_name", cls},      {"beta_start", 0.00085}, {"beta_end", 0.012},          {"beta_schedule", "scaled_linear"},
          {"num_train_timesteps", 1000}, {"steps_offset", 1}, {"set_alpha_to_one", false}, {"timestep_spacing", "leading"}};
}

Tensor filled(float v) {
  Tensor t = Tensor::zeros(DType::F32, {2});
  t.f32()[0] = t.f32()[1] = v;
  return t;
}

TEST(EulerScheduler, SigmasAtTheLeadingTimesteps) {
  auto s = make_scheduler(sd15("EulerDiscreteScheduler"), "config");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(*ts, (std::vector<float>{751, 501, 251, 1}));
  const auto& sigmas = dynamic_cast<EulerScheduler&>(**s).sigmas();
  // sqrt((1 - a) / a) of the cumulative alphas at 751, 501, 251, 1, then 0
  const std::vector<float> want = {4.1166997f, 1.6236926f, 0.6983982f, 0.0413145f, 0.0f};
  ASSERT_EQ(sigmas.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(sigmas[i], want[i], 2e-5f * (1 + want[i])) << i;
  // leading spacing: the initial noise scaled by sqrt(sigma_max^2 + 1)
  EXPECT_NEAR((*s)->init_noise_sigma(), 4.2364155f, 1e-4f);
  EXPECT_NEAR((*s)->scale_model_input(filled(2.0f), 1).f32()[0], 2.0f / std::sqrt(1.6236926f * 1.6236926f + 1), 1e-5f);
  // epsilon prediction: x + eps (sigma_next - sigma)
  EXPECT_NEAR((*s)->step(filled(0.5f), 0, filled(3.0f)).f32()[1], 3.0f + 0.5f * (1.6236926f - 4.1166997f), 1e-4f);
}

TEST(EulerScheduler, LinspaceTimestepsAreNotRounded) {
  nlohmann::json c = sd15("EulerDiscreteScheduler");
  c["timestep_spacing"] = "linspace";
  auto s = make_scheduler(c, "config");
  ASSERT_TRUE(s.ok());
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok());
  EXPECT_FLOAT_EQ((*ts)[1], 666.0f);
  EXPECT_NEAR(dynamic_cast<EulerScheduler&>(**s).sigmas()[1], 2.9183085f, 1e-4f);
  // linspace: the initial noise is sigma_max itself
  EXPECT_FLOAT_EQ((*s)->init_noise_sigma(), dynamic_cast<EulerScheduler&>(**s).sigmas()[0]);
}

TEST(MakeScheduler, KindSamplesTheSameScheduleAnotherWay) {
  auto e = make_scheduler(sd15("DDIMScheduler"), "config", "euler");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_NE(dynamic_cast<EulerScheduler*>(e->get()), nullptr);
  // a config of a scheduler archrun does not run (SD 1.5's PNDM) by DDIM
  auto d = make_scheduler(sd15("PNDMScheduler"), "config", "ddim");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_NE(dynamic_cast<DdimScheduler*>(d->get()), nullptr);
  auto pndm = make_scheduler(sd15("PNDMScheduler"), "config");
  ASSERT_FALSE(pndm.ok());
  EXPECT_NE(pndm.error().message.find("--scheduler"), std::string::npos) << pndm.error().message;
  nlohmann::json flow = {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 3.0}};
  EXPECT_FALSE(make_scheduler(flow, "config", "ddim").ok());
  auto f = make_scheduler(flow, "config", "euler");
  ASSERT_TRUE(f.ok());
  EXPECT_NE(dynamic_cast<FlowMatchEulerScheduler*>(f->get()), nullptr);
  EXPECT_FALSE(make_scheduler(flow, "config", "heun").ok());
}

TEST(FlowMatchEuler, DynamicShiftFollowsTheImagesTokens) {
  // FLUX.1's scheduler config; 64 image tokens: mu = 0.5 + 0.65 (64 - 256) / 3840,
  // sigma = e^mu / (e^mu + 1 / s - 1) over s = 1, 3/4, 1/2, 1/4.
  nlohmann::json c = {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"use_dynamic_shifting", true}, {"shift", 3.0},
                      {"base_shift", 0.5}, {"max_shift", 1.15}, {"base_image_seq_len", 256}, {"max_image_seq_len", 4096}};
  auto s = make_scheduler(c, "config");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_FALSE((*s)->set_timesteps(4).ok());  // no token count: refused, not guessed
  auto ts = (*s)->set_timesteps(4, 64);
  ASSERT_TRUE(ts.ok());
  const std::vector<float> want = {1000.0f, 827.2286f, 614.7919f, 347.2584f};
  ASSERT_EQ(ts->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR((*ts)[i], want[i], 2e-3f) << i;
  // the last step goes to sigma 0
  EXPECT_NEAR((*s)->step(filled(2.0f), 3, filled(1.0f)).f32()[0], 1.0f - 0.3472584f * 2.0f, 1e-5f);
}

}  // namespace
}  // namespace arch

// The schedulers' timesteps, sigmas and steps against diffusers' formulas
// (numbers worked out apart from the code, in float32 as torch does).
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/dpm_solver_scheduler.h"
#include "engine/runtime/lcm_scheduler.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/unipc_scheduler.h"

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

// DPM-Solver++ 2M on SD 1.5's leading schedule (steps + 1 points, the
// last dropped: 801, 601, 401, 201). Step 0 is first order; step 1 second
// order over step 0's x0, by the midpoint rule. The numbers come from the
// formulas of Lu et al. worked in double apart from the code
// (x0 = (x - sigma_t eps) / alpha_t, alpha_t = 1 / sqrt(sigma^2 + 1),
// sigma_t = sigma alpha_t, lambda = log(alpha_t / sigma_t)).
TEST(DpmSolverScheduler, TwoStepsAsDpmPlusPlus2M) {
  auto s = make_scheduler(sd15("DDIMScheduler"), "config", "dpm++2m");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto* dpm = dynamic_cast<DpmSolverScheduler*>(s->get());
  ASSERT_NE(dpm, nullptr);
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok()) << ts.error().message;
  EXPECT_EQ(*ts, (std::vector<float>{801, 601, 401, 201}));
  const std::vector<float> sigmas = {5.1344352f, 2.2928548f, 1.1682165f, 0.5740505f, 0.0f};
  for (size_t i = 0; i < sigmas.size(); ++i) EXPECT_NEAR(dpm->sigmas()[i], sigmas[i], 2e-5f * (1 + sigmas[i])) << i;
  EXPECT_EQ((*s)->init_noise_sigma(), 1.0f);
  const Tensor x1 = (*s)->step(filled(0.5f), 0, filled(3.0f));
  EXPECT_NEAR(x1.f32()[0], 5.7054988f, 1e-4f);
  const Tensor x2 = (*s)->step(filled(-0.25f), 1, x1);
  EXPECT_NEAR(x2.f32()[1], 9.6931821f, 2e-4f);
}

// Karras sigmas over SD 1.5's training sigmas (14.6147 down to 0.0291675,
// rho 7), each timestep the training step of its sigma, rounded; the last
// step goes to sigma 0 at first order: the x0 itself.
TEST(DpmSolverScheduler, KarrasSigmasAndTheirTimesteps) {
  auto s = make_scheduler(sd15("DDIMScheduler"), "config", "dpm++2m_karras");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(*ts, (std::vector<float>{999, 687, 146, 0}));
  const auto& sigmas = dynamic_cast<DpmSolverScheduler&>(**s).sigmas();
  const std::vector<float> want = {14.614655f, 3.1686126f, 0.4469210f, 0.0291675f, 0.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(sigmas[i], want[i], 2e-5f * (1 + want[i])) << i;
  for (size_t k = 0; k < 3; ++k) (void)(*s)->step(filled(0.1f), k, filled(1.0f));
  const float sigma = 0.0291675f, alpha = 1.0f / std::sqrt(sigma * sigma + 1.0f);
  EXPECT_NEAR((*s)->step(filled(0.5f), 3, filled(2.0f)).f32()[0], (2.0f - sigma * alpha * 0.5f) / alpha, 1e-5f);
  EXPECT_NEAR(sigma_to_t(3.1686126, {std::log(1.0), std::log(4.0)}), 0.832, 1e-3);  // log-linear between the two
}

// Euler ancestral: to sigma_down, then noise of sigma_up
// (sigma_up^2 = next^2 (sigma^2 - next^2) / sigma^2; sigma_down^2 +
// sigma_up^2 = next^2). With a zero model output x0 is x, so what the step
// adds is the noise alone, N(0, sigma_up^2), the same again from the same seed.
TEST(EulerAncestral, AddsTheNoiseItsSigmasLeave) {
  auto s = make_scheduler(sd15("DDIMScheduler"), "config", "euler_a");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE((*s)->set_timesteps(4).ok());
  const float sigma = 4.1166997f, next = 1.6236926f;  // at 751 and 501 (leading)
  const float up = std::sqrt(next * next * (sigma * sigma - next * next) / (sigma * sigma));
  const Tensor zero = Tensor::zeros(DType::F32, {20000});
  Tensor x = Tensor::zeros(DType::F32, {20000});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = 1.0f;
  (*s)->seed_noise(7);
  ASSERT_TRUE((*s)->set_timesteps(4).ok());
  const Tensor a = (*s)->step(zero, 0, x);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < a.numel(); ++i) mean += (a.f32()[i] - 1.0) / up;
  mean /= double(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i) var += std::pow((a.f32()[i] - 1.0) / up - mean, 2);
  var /= double(a.numel());
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(var, 1.0, 0.05);
  ASSERT_TRUE((*s)->set_timesteps(4).ok());  // the same draws again
  EXPECT_EQ((*s)->step(zero, 0, x).f32()[123], a.f32()[123]);
  (*s)->seed_noise(8);
  ASSERT_TRUE((*s)->set_timesteps(4).ok());
  EXPECT_NE((*s)->step(zero, 0, x).f32()[123], a.f32()[123]);
  // The last step, to sigma 0, adds none: Euler's own step.
  EXPECT_NEAR((*s)->step(filled(0.5f), 3, filled(3.0f)).f32()[0], 3.0f - 0.0413145f * 0.5f, 1e-5f);
}

// LCM: 4 of the 50 distillation timesteps (k = 20: 999, 979, ... 19),
// taken evenly by index; each step's x0 mixed by c_skip and c_out
// (sigma_data 0.5, timestep x 10), then noised to the next timestep; the
// last step's is the result itself.
TEST(LcmScheduler, TimestepsAndTheBoundaryCondition) {
  auto s = make_scheduler(sd15("DDIMScheduler"), "config", "lcm");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_NE(dynamic_cast<LcmScheduler*>(s->get()), nullptr);
  EXPECT_FALSE((*s)->set_timesteps(51).ok());  // past original_inference_steps
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(*ts, (std::vector<float>{999, 759, 499, 259}));
  for (size_t k = 0; k < 3; ++k) (void)(*s)->step(filled(0.5f), k, filled(3.0f));
  EXPECT_NEAR((*s)->step(filled(0.5f), 3, filled(3.0f)).f32()[0], 3.3359244f, 1e-4f);
  // A middle step: the boundary-mixed x0 (36.639155 at 999) scaled to the
  // next timestep's alpha, plus its noise; with x0's part known, the rest
  // is the noise times sqrt(1 - a_prev) = 0.9735436.
  ASSERT_TRUE((*s)->set_timesteps(4).ok());
  Tensor x = Tensor::zeros(DType::F32, {20000}), e = Tensor::zeros(DType::F32, {20000});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = 3.0f, e.f32()[i] = 0.5f;
  const Tensor out = (*s)->step(e, 0, x);
  double mean = 0, var = 0;
  for (int64_t i = 0; i < out.numel(); ++i) mean += (out.f32()[i] - 0.2285013 * 36.639155) / 0.9735436;
  mean /= double(out.numel());
  for (int64_t i = 0; i < out.numel(); ++i) var += std::pow((out.f32()[i] - 0.2285013 * 36.639155) / 0.9735436 - mean, 2);
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(var / double(out.numel()), 1.0, 0.05);  // N(0, 1) at exactly that scale
}

// Wan 2.1's scheduler/ config (Wan-AI/Wan2.1-T2V-1.3B-Diffusers): UniPC
// over flow sigmas shifted by 3.
nlohmann::json wan_unipc() {
  return {{"_class_name", "UniPCMultistepScheduler"}, {"flow_shift", 3.0}, {"num_train_timesteps", 1000},
          {"prediction_type", "flow_prediction"}, {"use_flow_sigmas", true}, {"solver_order", 2}, {"solver_type", "bh2"},
          {"lower_order_final", true}, {"predict_x0", true}, {"final_sigmas_type", "zero"}, {"disable_corrector", nlohmann::json::array()}};
}

// Four steps: sigmas 1 - linspace(1, 0.001, 5) = 0.999, 0.74925, 0.4995,
// 0.24975 shifted by 3 s / (1 + 2 s); timesteps those x 1000, cut to integers.
TEST(UniPcScheduler, WansFlowSigmasAndTimesteps) {
  auto s = make_scheduler(wan_unipc(), "config");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok()) << ts.error().message;
  EXPECT_EQ(*ts, (std::vector<float>{999, 899, 749, 499}));
  const auto& sig = static_cast<UniPcScheduler&>(**s).sigmas();
  ASSERT_EQ(sig.size(), 5u);
  const double want[] = {2.997 / 2.998, 2.24775 / 2.4985, 1.4985 / 1.999, 0.74925 / 1.4995, 0.0};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(sig[size_t(i)], want[i], 1e-6) << i;
}

// A model that knows the data (x0 = a point; v = (x - x0) / sigma): every
// x0 prediction is that point, the multistep differences vanish, and each
// step lands on the straight path (1 - sigma) x0 + sigma noise; the last
// on the point itself.
TEST(UniPcScheduler, AnExactVelocityFollowsTheStraightPath) {
  auto s = make_scheduler(wan_unipc(), "config");
  ASSERT_TRUE(s.ok());
  auto ts = (*s)->set_timesteps(6);
  ASSERT_TRUE(ts.ok());
  const auto& sig = static_cast<UniPcScheduler&>(**s).sigmas();
  const float x0 = 0.7f, noise = -1.3f;
  Tensor x = filled((1 - sig[0]) * x0 + sig[0] * noise);
  for (size_t k = 0; k < 6; ++k) {
    Tensor v = filled((x.f32()[0] - x0) / sig[k]);
    x = (*s)->step(v, k, x);
    EXPECT_NEAR(x.f32()[0], (1 - sig[k + 1]) * x0 + sig[k + 1] * noise, 2e-5) << "step " << k;
  }
  EXPECT_NEAR(x.f32()[0], x0, 2e-5);
}

// First order without the corrector is flow-matching Euler over the same
// sigmas: x + (sigma_next - sigma) v, whatever v is.
TEST(UniPcScheduler, FirstOrderUncorrectedIsEuler) {
  nlohmann::json c = wan_unipc();
  c["solver_order"] = 1;
  c["disable_corrector"] = {0, 1, 2, 3};
  auto s = make_scheduler(c, "config");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->set_timesteps(4).ok());
  const auto& sig = static_cast<UniPcScheduler&>(**s).sigmas();
  float euler = 0.4f;
  Tensor x = filled(euler);
  for (size_t k = 0; k < 4; ++k) {
    const float v = std::sin(3.0f * float(k) + x.f32()[0]);  // any velocity
    x = (*s)->step(filled(v), k, x);
    euler += (sig[k + 1] - sig[k]) * v;
    EXPECT_NEAR(x.f32()[0], euler, 1e-5) << "step " << k;
  }
}

// The second order's predictor and corrector by hand at step 1 (x0 m0 at
// sigma_0, m1 at sigma_1; h in log-SNR lambda = log((1 - s) / s)).
TEST(UniPcScheduler, SecondOrderStepByHand) {
  auto s = make_scheduler(wan_unipc(), "config");
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->set_timesteps(4).ok());
  const auto& sg = static_cast<UniPcScheduler&>(**s).sigmas();
  const double s0 = sg[0], s1 = sg[1], s2 = sg[2];
  auto lam = [](double v) { return std::log((1 - v) / v); };
  const double xa = 0.3, va = 0.9, vb = -0.4;
  // Step 0: first order, no corrector.
  const double m0 = xa - s0 * va;
  const double h1 = lam(s1) - lam(s0), phi1 = std::expm1(-h1);
  const double xb = s1 / s0 * xa - (1 - s1) * phi1 * m0;
  Tensor x = (*s)->step(filled(float(va)), 0, filled(float(xa)));
  EXPECT_NEAR(x.f32()[0], xb, 1e-6);
  // Step 1: UniC corrects xb with m1 = xb - s1 vb (order 1: rho 0.5), then
  // UniP of order 2 (rho 0.5 on D1 = (m0 - m1) / r, r = (lambda(s0) - lambda(s1)) / h).
  const double m1 = xb - s1 * vb;
  const double xc = s1 / s0 * xa - (1 - s1) * phi1 * m0 - (1 - s1) * phi1 * 0.5 * (m1 - m0);
  const double h2 = lam(s2) - lam(s1), phi2 = std::expm1(-h2), r = (lam(s0) - lam(s1)) / h2;
  const double xd = s2 / s1 * xc - (1 - s2) * phi2 * m1 - (1 - s2) * phi2 * 0.5 * (m0 - m1) / r;
  x = (*s)->step(filled(float(vb)), 1, x);
  EXPECT_NEAR(x.f32()[0], xd, 1e-5);
}

TEST(UniPcScheduler, WhatItDoesNotRunIsNamed) {
  nlohmann::json ddpm = wan_unipc();
  ddpm["use_flow_sigmas"] = false;
  auto a = make_scheduler(ddpm, "scheduler_config.json");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().message.find("a DDPM noise schedule"), std::string::npos) << a.error().message;
  nlohmann::json karras = wan_unipc();
  karras["use_karras_sigmas"] = true;
  auto b = make_scheduler(karras, "scheduler_config.json");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message.find("use_karras_sigmas"), std::string::npos) << b.error().message;
  nlohmann::json listed = wan_unipc();
  listed["disable_corrector"] = {1, "x"};
  auto d = make_scheduler(listed, "scheduler_config.json");
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("disable_corrector holds \"x\", not a step index"), std::string::npos) << d.error().message;
  // --scheduler euler samples Wan's schedule by flow-matching Euler at its shift.
  auto e = make_scheduler(wan_unipc(), "config", "euler");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_NE(dynamic_cast<FlowMatchEulerScheduler*>(e->get()), nullptr);
}

}  // namespace
}  // namespace arch

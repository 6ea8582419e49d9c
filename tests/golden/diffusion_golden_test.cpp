// Diffusion denoisers through forward(): every per-block tensor diffusers'
// own modeling code stored in expected.safetensors, within the golden
// README's float32 rule, on both paths.
#include <gtest/gtest.h>

#include <span>

#include <algorithm>

#include "importer/checkpoint/safetensors.h"
#include "engine/runtime/denoise.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/model.h"
#include "engine/runtime/pipeline.h"
#include "tests/golden/golden_case.h"
#include "tests/golden/inpainting_pipeline.h"
#include "tests/golden/golden_compare.h"

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
  // The sampling loop's tensors (ddim_*) are archrun denoise's, not forward's.
  testing::expect_matches_golden(dir, GetParam().family, 4, "ddim_");
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffusionGolden, ::testing::Values(Case{"dit", "DiTDiffusion"}, Case{"unet_sd15", "UNetDiffusion"},
                                                            Case{"unet_sd2", "UNetDiffusion"}, Case{"unet_sdxl", "UNetDiffusion"},
                                                            Case{"sd3", "MMDiT"}, Case{"flux", "Flux"},
                                                            Case{"vae_sd15", "VAEStyle"}, Case{"clip_text", "CLIPTextStyle"}),
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

// The unet_sd15, unet_sd2 and unet_sdxl goldens' four DDIM steps (751,
// 501, 251, 1), without and with classifier-free guidance (7.5; SDXL 5):
// every step's latents and model output (SD 2.x's a v prediction, which
// the scheduler converts; SDXL's with the pooled text and size ids, the
// negative text's pooled embedding beside the negative context).
class DdimGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(DdimGolden, TheTrajectoryMatchesDiffusersStepByStep) {
  const std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto config = read_scheduler_config(dir);
  ASSERT_TRUE(config.ok()) << config.error().message;
  auto scheduler = make_scheduler(*config, "scheduler_config.json");
  ASSERT_TRUE(scheduler.ok()) << scheduler.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor latents = first_tensor(dir + "/sampling_inputs.safetensors", "ddim_initial_latents");
  for (bool guided : {false, true}) {
    SCOPED_TRACE(guided ? "guided" : "unguided");
    DenoiseOptions opt;
    opt.steps = 4;
    opt.context = first_tensor(dir + "/inputs.safetensors", "encoder_hidden_states");
    const bool sdxl = GetParam() == "unet_sdxl";
    if (sdxl) {
      opt.extra["text_embeds"] = first_tensor(dir + "/inputs.safetensors", "text_embeds").reshaped({24});
      opt.extra["time_ids"] = first_tensor(dir + "/inputs.safetensors", "time_ids").reshaped({6});
    }
    if (guided) {
      opt.guidance = testing::read_json(dir + "/expected.json")["sampling"]["guidance_scale_cfg_loop"].get<float>();
      opt.negative_context = first_tensor(dir + "/sampling_inputs.safetensors", "negative_encoder_hidden_states");
      if (sdxl) {
        opt.negative_extra["text_embeds"] = first_tensor(dir + "/sampling_inputs.safetensors", "negative_text_embeds").reshaped({24});
        opt.negative_extra["time_ids"] = opt.extra["time_ids"];
      }
    }
    auto r = denoise(**model, **scheduler, latents, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->timesteps, (std::vector<float>{751, 501, 251, 1}));
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

INSTANTIATE_TEST_SUITE_P(Cases, DdimGolden, ::testing::Values("unet_sd15", "unet_sd2", "unet_sdxl"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// DPM-Solver++ of order 1 is DDIM (Lu et al.: the first-order solver in
// log-SNR is DDIM's step): on the golden's UNet, over the same timesteps
// (trailing, every 100th) to the same end (set_alpha_to_one), its path is
// the DDIM path that the trajectory above checks against diffusers'. This
// checks the sigmas, alphas and log-SNR steps the second order builds on
// (its own term is checked by hand in tests/engine/runtime).
TEST(DpmSolverGolden, FirstOrderWalksTheDdimPath) {
  const std::string dir = testing::golden_dir("unet_sd15");
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto config = read_scheduler_config(dir);
  ASSERT_TRUE(config.ok()) << config.error().message;
  (*config)["timestep_spacing"] = "trailing";
  (*config)["set_alpha_to_one"] = true;
  nlohmann::json first = *config;
  first["_class_name"] = "DPMSolverMultistepScheduler";
  first["solver_order"] = 1;
  DenoiseOptions opt;
  opt.steps = 10;
  opt.context = first_tensor(dir + "/inputs.safetensors", "encoder_hidden_states");
  const Tensor latents = first_tensor(dir + "/sampling_inputs.safetensors", "ddim_initial_latents");
  auto ddim = make_scheduler(*config, "ddim"), dpm = make_scheduler(first, "dpm");
  ASSERT_TRUE(ddim.ok() && dpm.ok());
  auto a = denoise(**model, **ddim, latents, opt), b = denoise(**model, **dpm, latents, opt);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->timesteps, b->timesteps);
  auto c = testing::compare_f32(b->trajectory.f32(), a->trajectory.f32(), a->trajectory.numel());
  EXPECT_TRUE(c.ok()) << "DPM-Solver++ 1 strays from DDIM by " << c.max_abs << " (allowed " << c.bound << ")";
  // Its second order leaves that path, and comes closer to where 100
  // small DDIM steps end (the ODE both solve).
  first["solver_order"] = 2;
  auto dpm2 = make_scheduler(first, "dpm2");
  ASSERT_TRUE(dpm2.ok());
  auto two = denoise(**model, **dpm2, latents, opt);
  opt.steps = 100;  // every 10th timestep: its own error a tenth of 10 steps' (measured)
  auto fine = denoise(**model, **ddim, latents, opt);
  ASSERT_TRUE(two.ok() && fine.ok());
  double e1 = 0, e2 = 0;
  for (int64_t i = 0; i < fine->latents.numel(); ++i) {
    e1 = std::max(e1, double(std::abs(a->latents.f32()[i] - fine->latents.f32()[i])));
    e2 = std::max(e2, double(std::abs(two->latents.f32()[i] - fine->latents.f32()[i])));
  }
  EXPECT_LT(e2, e1) << "second order " << e2 << ", first " << e1;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// Flow-matching Euler (SD3's scheduler): the sigmas diffusers makes for
// shift 3 over 4 steps, and a step as x + (sigma_next - sigma) v.
TEST(FlowMatchEuler, SigmasAndSteps) {
  auto s = make_scheduler({{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 3.0}}, "config");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto ts = (*s)->set_timesteps(4);
  ASSERT_TRUE(ts.ok());
  const std::vector<float> want = {1000.0f, 857.692f, 602.149f, 8.929f};  // shift(linspace(1000, 1000 shift(1/1000), 4) / 1000) x 1000
  ASSERT_EQ(ts->size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR((*ts)[i], want[i], 2e-3) << i;
  Tensor x = Tensor::zeros(DType::F32, {2}), v = Tensor::zeros(DType::F32, {2});
  x.f32()[0] = 1.0f;
  v.f32()[0] = 2.0f;
  Tensor y = (*s)->step(v, 3, x);  // the last step goes to sigma 0
  EXPECT_NEAR(y.f32()[0], 1.0f + (0.0f - 0.008929f) * 2.0f, 1e-5);
}

// SD3 through the loop: the first step is the latents moved by the model's
// own output at timestep 1000, as forward gives it.
TEST(FlowMatchEuler, Sd3LoopStepsByTheModelsVelocity) {
  const std::string dir = testing::golden_dir("sd3");
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto s = make_scheduler({{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 3.0}}, "config");
  ASSERT_TRUE(s.ok());
  const std::string in = dir + "/inputs.safetensors";
  DenoiseOptions opt;
  opt.steps = 2;
  opt.context = first_tensor(in, "encoder_hidden_states");
  opt.extra["pooled_projections"] = first_tensor(in, "pooled_projections").reshaped({40});
  const Tensor x = first_tensor(in, "hidden_states");
  auto r = denoise(**model, **s, x, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->timesteps.size(), 2u);
  EXPECT_FLOAT_EQ(r->timesteps[0], 1000.0f);
  Session session(**model);
  Tensor t = Tensor::zeros(DType::F32, {1});
  t.f32()[0] = 1000.0f;
  auto v = session.run("denoise", {{"hidden_states", x.reshaped({16, 16, 16})}, {"timestep", t},
                                   {"encoder_hidden_states", opt.context.reshaped({10, 48})},
                                   {"pooled_projections", opt.extra["pooled_projections"]}}, {"sample"});
  ASSERT_TRUE(v.ok()) << v.error().message;
  const float sigma1 = r->timesteps[1] / 1000.0f;
  const Tensor& eps = v->at("sample");
  for (int64_t i = 0; i < eps.numel(); i += 97)
    EXPECT_NEAR(r->trajectory.f32()[eps.numel() + i], x.f32()[i] + (sigma1 - 1.0f) * eps.f32()[i], 1e-5) << i;
}

// Flux through the loop: the template's pack graph makes the golden's
// packed tokens and ids from the latents [C, H, W]; one step of the
// dynamic-shift schedule (sigma 1, fed as 1000 / 1000) is the latents moved
// by the model's velocity at the golden's inputs, guidance 3.5 as an input.
TEST(FlowMatchEuler, FluxLoopPacksAndStepsByTheModelsVelocity) {
  const std::string dir = testing::golden_dir("flux");
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const std::string in = dir + "/inputs.safetensors";
  const Tensor tokens = first_tensor(in, "hidden_states").reshaped({64, 16});
  Session session(**model);
  // The golden's tokens unpacked to the 4 x 16 x 16 latents, and packed back.
  auto un = session.run("unpack", {{"hidden_states", tokens}, {"like", Tensor::zeros(DType::F32, {4, 16, 16})}}, {"latents"});
  ASSERT_TRUE(un.ok()) << un.error().message;
  const Tensor latents = un->at("latents");
  const Tensor context = first_tensor(in, "encoder_hidden_states").reshaped({8, 48});
  auto packed = session.run("pack", {{"latents", latents}, {"encoder_hidden_states", context}},
                            {"hidden_states", "img_ids", "txt_ids"});
  ASSERT_TRUE(packed.ok()) << packed.error().message;
  for (const char* name : {"hidden_states", "img_ids", "txt_ids"}) {
    const Tensor want = first_tensor(in, name);
    const Tensor& got = packed->at(name);
    ASSERT_EQ(got.numel(), want.numel()) << name;
    for (int64_t i = 0; i < got.numel(); ++i) ASSERT_EQ(got.f32()[i], want.f32()[i]) << name << " " << i;
  }
  auto s = make_scheduler({{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"use_dynamic_shifting", true}}, "config");
  ASSERT_TRUE(s.ok()) << s.error().message;
  DenoiseOptions opt;
  opt.steps = 1;
  opt.guidance = 3.5f;
  opt.context = context;
  opt.extra["pooled_projections"] = first_tensor(in, "pooled_projections").reshaped({40});
  auto r = denoise(**model, **s, latents, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->timesteps, std::vector<float>{1000.0f});
  EXPECT_EQ(r->latents.shape, (Dims{4, 16, 16}));
  Tensor one = Tensor::zeros(DType::F32, {1}), guidance = Tensor::zeros(DType::F32, {1});
  one.f32()[0] = 1.0f;
  guidance.f32()[0] = 3.5f;
  NamedTensors direct = {{"hidden_states", tokens}, {"timestep", one}, {"guidance", guidance},
                         {"encoder_hidden_states", context}, {"pooled_projections", opt.extra["pooled_projections"]},
                         {"img_ids", first_tensor(in, "img_ids")}, {"txt_ids", first_tensor(in, "txt_ids")}};
  auto v = session.run("denoise", direct, {"sample"});
  ASSERT_TRUE(v.ok()) << v.error().message;
  auto v_image = session.run("unpack", {{"hidden_states", v->at("sample")}, {"like", latents}}, {"latents"});
  ASSERT_TRUE(v_image.ok());
  const Tensor& vel = v_image->at("latents");
  for (int64_t i = 0; i < vel.numel(); ++i)
    ASSERT_NEAR(r->latents.f32()[i], latents.f32()[i] - vel.f32()[i], 1e-5) << i;
  // a guidance-distilled model runs no negative context
  opt.negative_context = context;
  EXPECT_FALSE(denoise(**model, **s, latents, opt).ok());
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// Each of a pipeline run's tensors against the one the golden recorded under its name.
void expect_recorded(const std::string& dir, std::span<const std::pair<const char*, const Tensor*>> got) {
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  for (const auto& [name, t] : got) {
    const Tensor& want = expected->tensors.at(name);
    ASSERT_EQ(t->numel(), want.numel()) << name;
    auto c = testing::compare_f32(t->f32(), want.f32(), want.numel());
    EXPECT_TRUE(c.ok()) << name << " differs by " << c.max_abs << " (allowed " << c.bound << ")";
  }
}

// The whole Stable Diffusion 1.5 pipeline folder: the text encoder on the
// prompt and the empty prompt, four DDIM steps with guidance 7.5 from the
// stored latents, the VAE's decode, the image in [0, 1]: every tensor the
// pipeline golden recorded.
TEST(PipelineGolden, TextToImageMatchesDiffusersStepByStep) {
  const std::string dir = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  ASSERT_TRUE(is_pipeline(dir));
  auto p = load_pipeline(dir);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->text_encoder->family, "CLIPTextStyle");
  EXPECT_EQ(p->denoiser->family, "UNetDiffusion");
  EXPECT_EQ(p->vae->family, "VAEStyle");
  auto in = testing::read_json(dir + "/inputs.json");
  ImagineOptions opt;
  opt.ids = in["prompt_input_ids"].get<std::vector<int32_t>>();
  opt.negative_ids = in["negative_input_ids"].get<std::vector<int32_t>>();
  opt.steps = 4;
  opt.guidance = 7.5f;
  opt.latents = first_tensor(dir + "/inputs.safetensors", "latents");
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::pair<const char*, const Tensor*> got[] = {
      {"prompt_embeds", &r->prompt_embeds},        {"negative_prompt_embeds", &r->negative_prompt_embeds},
      {"latents", &r->denoised.trajectory},        {"noise_pred", &r->denoised.noise_preds},
      {"decode_input", &r->decode_input},          {"image_decoded", &r->image_decoded},
      {"image", &r->image}};
  expect_recorded(dir, got);
}

// The SDXL pipeline folder: both text encoders (penultimate hidden states
// side by side, the second's projected pooled row), zeros for the
// unconditional half, the size ids from original size (48, 40), crop (4, 0)
// and the 32 x 32 target, four Euler steps with guidance 5, the VAE's
// decode: every tensor the golden recorded.
TEST(PipelineGolden, SdxlTextToImageMatchesDiffusersStepByStep) {
  const std::string dir = testing::golden_dir("sdxl_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  auto p = load_pipeline(dir);
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_TRUE(p->text_encoder_2);
  auto in = testing::read_json(dir + "/inputs.json");
  ImagineOptions opt;
  opt.ids = in["prompt_input_ids"].get<std::vector<int32_t>>();
  opt.ids_2 = in["prompt_input_ids_2"].get<std::vector<int32_t>>();
  opt.steps = 4;
  opt.guidance = 5.0f;
  opt.original_height = 48, opt.original_width = 40, opt.crop_top = 4, opt.crop_left = 0;
  opt.latents = first_tensor(dir + "/inputs.safetensors", "latents");
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const std::pair<const char*, const Tensor*> got[] = {
      {"prompt_embeds", &r->prompt_embeds}, {"pooled_prompt_embeds", &r->pooled_prompt_embeds},
      {"add_time_ids", &r->add_time_ids},   {"latents", &r->denoised.trajectory},
      {"noise_pred", &r->denoised.noise_preds}, {"decode_input", &r->decode_input},
      {"image_decoded", &r->image_decoded}, {"image", &r->image}};
  expect_recorded(dir, got);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// The templates take images of any size: a 12 x 16 image from the same
// pipeline (its UNet and VAE reshape by the input's size, not the config's;
// this VAE's two levels make its scale 2), and a size the VAE's scale does
// not divide refused by name.
TEST(PipelineAnySize, ANonSquareImageOfAnotherSize) {
  const std::string dir = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  auto p = load_pipeline(dir);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto shape = latent_shape(*p, 12, 16);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(*shape, (Dims{4, 6, 8}));
  auto fallback = latent_shape(*p);
  ASSERT_TRUE(fallback.ok());
  EXPECT_EQ(*fallback, (Dims{4, 16, 16}));  // the UNet's sample_size
  EXPECT_EQ(vae_scale(*p), 2);
  auto odd = latent_shape(*p, 13, 16);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("multiple of 2"), std::string::npos) << odd.error().message;
  auto in = testing::read_json(dir + "/inputs.json");
  ImagineOptions opt;
  opt.ids = in["prompt_input_ids"].get<std::vector<int32_t>>();
  opt.negative_ids = in["negative_input_ids"].get<std::vector<int32_t>>();
  opt.steps = 2;
  opt.latents = Tensor::zeros(DType::F32, *shape);
  for (int64_t i = 0; i < opt.latents.numel(); ++i) opt.latents.f32()[i] = float((i * 37) % 19) / 9.5f - 1.0f;
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->denoised.trajectory.shape, (Dims{3, 4, 6, 8}));
  EXPECT_EQ(r->image.shape, (Dims{3, 12, 16}));
  // the image is clamped to [0, 1]: what can go wrong is a constant one
  const auto [lo, hi] = std::minmax_element(r->image.f32(), r->image.f32() + r->image.numel());
  EXPECT_GT(*hi - *lo, 0.1f);
}

// Image to image (diffusers' img2img): the VAE's posterior sample of the
// image, scaled, noised by the initial latents to the first step run
// (strength 0.5 of DDIM's 751, 501, 251, 1: the last two), then those
// steps. Inpainting: after the last step the kept part is the image's
// latents exactly, the rest made anew.
TEST(PipelineImage, ImageToImageAndInpaintingStartFromTheImage) {
  const std::string dir = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(dir);
  auto p = load_pipeline(dir);
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto in = testing::read_json(dir + "/inputs.json");
  ImagineOptions opt;
  opt.ids = in["prompt_input_ids"].get<std::vector<int32_t>>();
  opt.negative_ids = in["negative_input_ids"].get<std::vector<int32_t>>();
  opt.steps = 4;
  opt.latents = first_tensor(dir + "/inputs.safetensors", "latents");
  opt.noise_seed = 11;
  opt.init_image = Tensor::zeros(DType::F32, {3, 32, 32});
  for (int64_t i = 0; i < opt.init_image.numel(); ++i) opt.init_image.f32()[i] = float((i * 13) % 29) / 28.0f;
  opt.strength = 0.5f;
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->denoised.timesteps, (std::vector<float>{251, 1}));
  EXPECT_EQ(r->denoised.trajectory.shape, (Dims{3, 4, 16, 16}));
  // The image's latents: (mean + std x N(0, 1) at noise_seed + 1) x scaling_factor.
  Tensor pixels = opt.init_image;
  for (int64_t i = 0; i < pixels.numel(); ++i) pixels.f32()[i] = pixels.f32()[i] * 2 - 1;
  auto post = forward(*p->vae, {{"image", pixels}}, {"latent_mean", "latent_std"}, nullptr, "encode");
  ASSERT_TRUE(post.ok()) << post.error().message;
  const Tensor eps = seeded_latents({4, 16, 16}, 12);
  const float sf = float(p->vae->checkpoint.config.value("scaling_factor", 0.18215));
  auto sched = read_scheduler_config(dir + "/unet");
  ASSERT_TRUE(sched.ok());
  auto ddpm = DdpmSchedule::from_config(*sched, "config");
  ASSERT_TRUE(ddpm.ok());
  const double a = ddpm->alphas_cumprod[251];
  const Tensor noise = opt.latents.reshaped({4, 16, 16});
  for (int64_t i = 0; i < 4 * 16 * 16; ++i) {
    const double x0 = (post->at("latent_mean").f32()[i] + post->at("latent_std").f32()[i] * eps.f32()[i]) * sf;
    ASSERT_NEAR(r->image_latents.f32()[i], x0, 1e-5 * (1 + std::abs(x0))) << i;
    ASSERT_NEAR(r->denoised.trajectory.f32()[i], std::sqrt(a) * x0 + std::sqrt(1 - a) * noise.f32()[i], 1e-4) << i;
  }
  // Inpainting the left half (white) at strength 1: the loop starts from
  // the noise (DDIM's four steps); the right half ends as the image's latents.
  opt.strength = 1.0f;
  opt.mask = Tensor::zeros(DType::F32, {1, 32, 32});
  for (int64_t y = 0; y < 32; ++y)
    for (int64_t x = 0; x < 16; ++x) opt.mask.f32()[y * 32 + x] = 1.0f;
  auto inpaint = imagine(*p, opt);
  ASSERT_TRUE(inpaint.ok()) << inpaint.error().message;
  EXPECT_EQ(inpaint->denoised.timesteps.size(), 4u);
  const Tensor& z = inpaint->denoised.latents;
  double made = 0;
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t y = 0; y < 16; ++y)
      for (int64_t x = 0; x < 16; ++x) {
        const int64_t i = (c * 16 + y) * 16 + x;
        EXPECT_EQ(inpaint->mask_latents.f32()[y * 16 + x], x < 8 ? 1.0f : 0.0f);
        if (x >= 8) ASSERT_EQ(z.f32()[i], inpaint->image_latents.f32()[i]) << i;
        else made = std::max(made, double(std::abs(z.f32()[i] - inpaint->image_latents.f32()[i])));
      }
  EXPECT_GT(made, 0.01);
  // What cannot run is refused by name.
  opt.mask = Tensor{};
  opt.strength = 0.2f;  // int(4 x 0.2) = 0 steps
  auto none = imagine(*p, opt);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("leaves no step to run"), std::string::npos) << none.error().message;
  opt.strength = 0.5f;
  opt.init_image = Tensor::zeros(DType::F32, {3, 31, 32});
  auto odd = imagine(*p, opt);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("multiples of 2"), std::string::npos) << odd.error().message;
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

ImagineOptions inpainting_options(const std::string& dir) {
  auto in = testing::read_json(dir + "/inputs.json");
  ImagineOptions opt;
  opt.ids = in["prompt_input_ids"].get<std::vector<int32_t>>();
  opt.steps = 4;
  opt.guidance = 1.0f;
  opt.latents = first_tensor(dir + "/inputs.safetensors", "latents");
  opt.noise_seed = 11;
  opt.init_image = Tensor::zeros(DType::F32, {3, 32, 32});
  for (int64_t i = 0; i < opt.init_image.numel(); ++i) opt.init_image.f32()[i] = float((i * 13) % 29) / 28.0f;
  opt.mask = Tensor::zeros(DType::F32, {1, 32, 32});
  for (int64_t y = 0; y < 32; ++y)
    for (int64_t x = 0; x < 16; ++x) opt.mask.f32()[y * 32 + x] = 1.0f;  // the left half made anew
  return opt;
}

// An inpainting UNet (diffusers' StableDiffusionInpaintPipeline over
// in_channels 9): each step's input is [the latents; the mask at the
// latents' size; the latents of the image gray where the mask is white],
// and nothing is put back after a step. No golden of diffusers' own has
// one: the check is built from the sd15 golden's components.
TEST(PipelineInpainting, ANineChannelUNetTakesTheMaskAndTheMaskedImage) {
  const std::string golden = testing::golden_dir("sd15_pipeline");
  ARCH_REQUIRE_SHARED(golden);
  // With the new channels' weights zero it computes what the golden's UNet
  // does on the latents alone: image to image at the same strength, unmasked.
  {
    testing::InpaintingPipeline zero([](int64_t) { return 0.0f; });
    auto p9 = load_pipeline(zero.dir.string());
    ASSERT_TRUE(p9.ok()) << p9.error().message;
    EXPECT_EQ(p9->conditioning_channels, 5);
    auto p4 = load_pipeline(golden);
    ASSERT_TRUE(p4.ok()) << p4.error().message;
    ImagineOptions opt = inpainting_options(golden);
    opt.strength = 0.5f;
    auto nine = imagine(*p9, opt);
    ASSERT_TRUE(nine.ok()) << nine.error().message;
    opt.mask = Tensor{};
    auto four = imagine(*p4, opt);
    ASSERT_TRUE(four.ok()) << four.error().message;
    ASSERT_EQ(nine->denoised.trajectory.shape, four->denoised.trajectory.shape);
    EXPECT_EQ(nine->denoised.timesteps, (std::vector<float>{251, 1}));
    for (int64_t i = 0; i < nine->denoised.trajectory.numel(); ++i)
      ASSERT_NEAR(nine->denoised.trajectory.f32()[i], four->denoised.trajectory.f32()[i], 1e-5) << i;
  }
  testing::InpaintingPipeline weighted([](int64_t i) { return float((i * 7) % 11 - 5) * 0.02f; });
  auto p = load_pipeline(weighted.dir.string());
  ASSERT_TRUE(p.ok()) << p.error().message;
  ImagineOptions opt = inpainting_options(golden);
  opt.strength = 1.0f;
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // The channels beside the latents: the mask, then the masked image's latents (its posterior sampled at noise_seed + 2).
  Tensor masked = opt.init_image;
  for (int64_t i = 0; i < masked.numel(); ++i)
    if (opt.mask.f32()[i % (32 * 32)] >= 0.5f) masked.f32()[i] = 0.5f;
  auto want_latents = image_latents(*p, masked, opt.noise_seed + 2);
  ASSERT_TRUE(want_latents.ok()) << want_latents.error().message;
  ASSERT_EQ(r->masked_image_latents.shape, (Dims{5, 16, 16}));
  for (int64_t i = 0; i < 16 * 16; ++i) ASSERT_EQ(r->masked_image_latents.f32()[i], i % 16 < 8 ? 1.0f : 0.0f) << i;
  for (int64_t i = 0; i < 4 * 16 * 16; ++i) ASSERT_EQ(r->masked_image_latents.f32()[256 + i], want_latents->f32()[i]) << i;
  // At strength 1 the loop starts from the noise alone, and its first
  // prediction is the UNet's on [latents; mask; masked image's latents].
  EXPECT_EQ(r->denoised.timesteps.size(), 4u);
  const Tensor noise = opt.latents.reshaped({4, 16, 16});
  Tensor in9 = Tensor::zeros(DType::F32, {9, 16, 16});
  for (int64_t i = 0; i < 4 * 256; ++i) {
    ASSERT_EQ(r->denoised.trajectory.f32()[i], noise.f32()[i]) << i;  // DDIM's init_noise_sigma is 1
    in9.f32()[i] = noise.f32()[i];
  }
  std::copy(r->masked_image_latents.f32(), r->masked_image_latents.f32() + 5 * 256, in9.f32() + 4 * 256);
  Tensor t = Tensor::zeros(DType::I32, {1});
  t.i32()[0] = int32_t(r->denoised.timesteps[0]);
  auto first = forward(*p->denoiser, {{"sample", in9}, {"timestep", t}, {"encoder_hidden_states", r->prompt_embeds}}, {"sample"},
                       nullptr, "denoise");
  ASSERT_TRUE(first.ok()) << first.error().message;
  const Tensor& eps = first->at("sample");
  ASSERT_EQ(eps.numel(), 4 * 256);
  for (int64_t i = 0; i < eps.numel(); ++i) ASSERT_NEAR(r->denoised.noise_preds.f32()[i], eps.f32()[i], 1e-5) << i;
  // Nothing is put back: the kept half is not the image's latents at the end.
  double off = 0;
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t i = 0; i < 256; ++i)
      if (i % 16 >= 8) off = std::max(off, double(std::abs(r->denoised.latents.f32()[c * 256 + i] - r->image_latents.f32()[c * 256 + i])));
  EXPECT_GT(off, 1e-3);
  // It needs the image and the mask.
  opt.mask = Tensor{};
  auto alone = imagine(*p, opt);
  ASSERT_FALSE(alone.ok());
  EXPECT_NE(alone.error().message.find("an inpainting UNet (in_channels 9) makes an image from one to start from and a mask"),
            std::string::npos)
      << alone.error().message;
}

}  // namespace
}  // namespace arch

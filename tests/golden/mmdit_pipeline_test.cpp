// SD3's and Flux's pipeline folders (StableDiffusion3Pipeline,
// FluxPipeline): there is no golden of a whole one, so the check is built
// from the component goldens. The transformer is the sd3 or flux golden
// itself (checked block by block against diffusers), the text encoders
// and the VAE the clip_text, t5 and vae_sd15 goldens' layouts at the
// widths the transformer takes, with random weights (their templates are
// checked by those goldens). What the pipeline adds is checked here: the
// context and pooled row laid out as diffusers lays them, the loop run on
// them, the VAE's decode of its end (with SD3's shift).
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/denoise.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/pipeline.h"
#include "tests/golden/mmdit_pipelines.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::latents_of;
using testing::output_of;

TEST(Sd3Pipeline, ContextOfThreeEncodersThroughTheLoopAndTheShiftedVae) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("sd3"));
  const fs::path dir = fs::temp_directory_path() / ("sd3_pipeline_" + std::to_string(getpid()));
  fs::remove_all(dir);
  testing::make_sd3_pipeline(dir);
  auto p = load_pipeline(dir.string());
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->text_encoder_3->family, "T5EncoderStyle");
  auto shape = latent_shape(*p);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(*shape, (Dims{16, 16, 16}));  // the transformer's sample_size
  ImagineOptions opt;
  opt.ids = {0, 5, 9, 2, 1, 1, 1, 1};
  opt.ids_2 = {0, 7, 3, 2, 1, 1, 1, 1};
  opt.ids_3 = {13, 44, 1, 0, 0};
  opt.negative_ids = {0, 2, 1, 1, 1, 1, 1, 1};
  opt.negative_ids_3 = {1, 0, 0, 0, 0};
  opt.steps = 2;
  opt.guidance = 5.0f;
  opt.latents = latents_of(*shape);
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  // The context: [CLIP-L | CLIP-G | zeros] for each CLIP row, then the T5's rows.
  const Tensor l = output_of(*p->text_encoder, opt.ids, "penultimate_hidden_state");
  const Tensor g = output_of(*p->text_encoder_2, opt.ids_2, "penultimate_hidden_state");
  const Tensor t5 = output_of(*p->text_encoder_3, opt.ids_3, "encoder_last_hidden_state");
  ASSERT_EQ(r->prompt_embeds.shape, (Dims{8 + 5, 48}));
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t c = 0; c < 48; ++c) {
      const float want = c < 8 ? l.f32()[i * 8 + c] : c < 40 ? g.f32()[i * 32 + c - 8] : 0.0f;
      ASSERT_EQ(r->prompt_embeds.f32()[i * 48 + c], want) << i << "," << c;
    }
  for (int64_t i = 0; i < 5 * 48; ++i) ASSERT_EQ(r->prompt_embeds.f32()[8 * 48 + i], t5.f32()[i]) << i;
  // The pooled row: both projections side by side.
  const Tensor pl = output_of(*p->text_encoder, opt.ids, "text_embeds");
  const Tensor pg = output_of(*p->text_encoder_2, opt.ids_2, "text_embeds");
  ASSERT_EQ(r->pooled_prompt_embeds.numel(), 40);
  for (int64_t c = 0; c < 40; ++c) EXPECT_EQ(r->pooled_prompt_embeds.f32()[c], c < 16 ? pl.f32()[c] : pg.f32()[c - 16]) << c;
  // The negative prompt through the same encoders (the second CLIP on the first's ids).
  ASSERT_EQ(r->negative_prompt_embeds.shape, (Dims{13, 48}));
  const Tensor ng = output_of(*p->text_encoder_2, opt.negative_ids, "penultimate_hidden_state");
  EXPECT_EQ(r->negative_prompt_embeds.f32()[3 * 48 + 20], ng.f32()[3 * 32 + 12]);
  // The loop is the transformer's on them, guided.
  DenoiseOptions d;
  d.steps = 2;
  d.guidance = 5.0f;
  d.context = r->prompt_embeds;
  d.negative_context = r->negative_prompt_embeds;
  d.extra["pooled_projections"] = r->pooled_prompt_embeds;
  d.negative_extra["pooled_projections"] = r->negative_pooled_prompt_embeds;
  auto s = make_scheduler({{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 3.0}}, "config");
  ASSERT_TRUE(s.ok());
  auto loop = denoise(*p->denoiser, **s, opt.latents, d);
  ASSERT_TRUE(loop.ok()) << loop.error().message;
  ASSERT_EQ(loop->latents.numel(), r->denoised.latents.numel());
  for (int64_t i = 0; i < loop->latents.numel(); ++i) ASSERT_EQ(r->denoised.latents.f32()[i], loop->latents.f32()[i]) << i;
  // The VAE decodes latents / scaling_factor + shift_factor.
  for (int64_t i = 0; i < 16; ++i)
    EXPECT_NEAR(r->decode_input.f32()[i], loop->latents.f32()[i] / 1.5305f + 0.0609f, 1e-6f) << i;
  EXPECT_EQ(r->image.shape, (Dims{3, 32, 32}));
  fs::remove_all(dir);
}

TEST(FluxPipeline, T5ContextClipPooledGuidanceInputAndPackedLatents) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("flux"));
  const fs::path dir = fs::temp_directory_path() / ("flux_pipeline_" + std::to_string(getpid()));
  fs::remove_all(dir);
  testing::make_flux_pipeline(dir);
  auto p = load_pipeline(dir.string());
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto shape = latent_shape(*p, 32, 32);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  EXPECT_EQ(*shape, (Dims{4, 16, 16}));
  auto odd = latent_shape(*p, 34, 32);  // 17 latent rows: not whole 2x2 patches
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error().message.find("multiple of 4"), std::string::npos) << odd.error().message;
  ImagineOptions opt;
  opt.ids = {0, 5, 9, 2, 1, 1};
  opt.ids_2 = {13, 44, 1, 0};
  opt.steps = 2;
  opt.guidance = 3.5f;
  opt.latents = latents_of(*shape);
  auto r = imagine(*p, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->denoised.guidance_input);
  EXPECT_FALSE(r->denoised.guided);
  const Tensor t5 = output_of(*p->text_encoder_2, opt.ids_2, "encoder_last_hidden_state");
  const Tensor pooled = output_of(*p->text_encoder, opt.ids, "pooler_output");
  ASSERT_EQ(r->prompt_embeds.numel(), t5.numel());
  for (int64_t i = 0; i < t5.numel(); ++i) ASSERT_EQ(r->prompt_embeds.f32()[i], t5.f32()[i]) << i;
  for (int64_t i = 0; i < 40; ++i) ASSERT_EQ(r->pooled_prompt_embeds.f32()[i], pooled.f32()[i]) << i;
  DenoiseOptions d;
  d.steps = 2;
  d.guidance = 3.5f;
  d.context = t5;
  d.extra["pooled_projections"] = pooled;
  auto s = make_scheduler({{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"use_dynamic_shifting", true}, {"shift", 3.0}}, "config");
  ASSERT_TRUE(s.ok());
  auto loop = denoise(*p->denoiser, **s, opt.latents, d);
  ASSERT_TRUE(loop.ok()) << loop.error().message;
  for (int64_t i = 0; i < loop->latents.numel(); ++i) ASSERT_EQ(r->denoised.latents.f32()[i], loop->latents.f32()[i]) << i;
  EXPECT_EQ(r->image.shape, (Dims{3, 32, 32}));
  // Flux runs no negative prompt: refused by name, not ignored.
  opt.negative_ids = {0, 2};
  auto neg = imagine(*p, opt);
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.error().message.find("no negative prompt"), std::string::npos) << neg.error().message;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace arch

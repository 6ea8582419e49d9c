// A diffusers pipeline folder (model_index.json with text_encoder/, unet/,
// vae/, scheduler/): each component dispatched to its family as any
// checkpoint is, and text to image over them (Stable Diffusion 1.x and
// 2.x): the prompt's and the negative prompt's embeddings from the text
// encoder, the sampling loop over the UNet with classifier-free guidance,
// the VAE's decode of latents / scaling_factor, the image in [0, 1].
// SDXL's (StableDiffusionXLPipeline) adds text_encoder_2/: the two
// encoders' penultimate hidden states side by side, the second's projected
// pooled embedding and the size ids (original size, crop, target size) as
// the UNet's text-time conditioning, zeros for the unconditional half where
// no negative prompt is given (force_zeros_for_empty_prompt).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/denoise.h"
#include "engine/runtime/model.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

struct Pipeline {
  std::string dir;
  nlohmann::json index;                       // model_index.json
  std::string kind;                           // its _class_name: StableDiffusion(XL|3)Pipeline, FluxPipeline, WanPipeline
  std::shared_ptr<Model> text_encoder, denoiser, vae;
  std::string denoiser_folder;                // unet/ (SD 1.x, 2.x, XL) or transformer/ (SD3, Flux, Wan)
  std::shared_ptr<Model> text_encoder_2;      // SDXL's and SD3's second CLIP, Flux's T5 (null: none)
  std::shared_ptr<Model> text_encoder_3;      // SD3's T5 (null: none, its part of the context zeros)
  // Wan 2.2 A14B's low-noise expert (transformer_2/), taking the steps whose
  // timestep is below boundary_ratio x the scheduler's training steps.
  std::shared_ptr<Model> denoiser_2;
  double boundary_ratio = 0;
  int scheduler_train_steps = 1000;           // its config's num_train_timesteps
  std::unique_ptr<Scheduler> scheduler;
  std::string scheduler_path;
  // An inpainting UNet's input channels past the latents (in_channels 9 of
  // SD's: the mask and the masked image's latents); 0 for the others.
  int64_t conditioning_channels = 0;
};

// Each component there is, by its folder's name (text_encoder,
// text_encoder_2, text_encoder_3, unet or transformer, transformer_2, vae).
std::vector<std::pair<std::string, const Model*>> pipeline_components(const Pipeline& p);

// Whether `dir` is a pipeline folder (it holds model_index.json).
bool is_pipeline(const std::string& dir);
// `scheduler`: a --scheduler name (scheduler_kinds()) samples the scheduler/ config's noise
// schedule by that method (make_scheduler's kind); empty: its own.
Result<Pipeline> load_pipeline(const std::string& dir, const LoadOptions& opt = {}, const std::string& scheduler = "");

struct ImagineOptions {
  std::vector<int32_t> ids, negative_ids;     // the prompts' token ids (negative: none without guidance)
  std::vector<int32_t> ids_2, negative_ids_2; // SDXL's and SD3's second encoder's (empty: the first's); Flux's T5's
  std::vector<int32_t> ids_3, negative_ids_3; // SD3's T5's
  // SDXL's size conditioning, (height, width) and (top, left); 0, 0: the
  // output size and no crop, as diffusers defaults them.
  int64_t original_height = 0, original_width = 0, crop_top = 0, crop_left = 0;
  int steps = 20;
  float guidance = 7.5f;
  float guidance_2 = -1.0f;                   // the low-noise expert's (below 0: `guidance`)
  Tensor latents;                             // the initial latents [C, h, w]
  uint64_t noise_seed = 0;                    // the noise a sampler adds per step (noise_seed_of(seed))
  // Image to image (StableDiffusionImg2ImgPipeline): the image [3, H, W]
  // in [0, 1] at the output's size, encoded by the VAE (a sample of its
  // posterior, drawn at noise_seed + 1), the last steps x strength steps
  // run from it noised by `latents`. Inpainting
  // (StableDiffusionInpaintPipeline): `mask` [1, H, W] in [0, 1], white
  // (>= 0.5) made anew, black kept: over a UNet of the latents' channels,
  // the kept part put back after each step; an inpainting UNet (in_channels
  // 2 x latents + 1) takes the mask and the masked image's latents (the
  // image gray where the mask is white, encoded at noise_seed + 2) beside
  // the latents at every step instead, and needs both.
  Tensor init_image;
  float strength = 0.8f;
  Tensor mask;
  std::function<void(int step, int steps)> on_step;
};

struct ImagineResult {
  // A video pipeline's image is the video [3, F, H, W] (decode_input and
  // image_decoded likewise).
  Tensor prompt_embeds, negative_prompt_embeds;
  Tensor pooled_prompt_embeds, negative_pooled_prompt_embeds, add_time_ids;  // SDXL's
  Tensor image_latents, mask_latents;         // image to image: the image's, scaled; the mask at the latents' size
  Tensor masked_image_latents;                // an inpainting UNet's: the masked image's, scaled
  DenoiseResult denoised;
  Tensor decode_input, image_decoded;         // latents / scaling_factor; the VAE's output
  Tensor image;                               // [3, H, W] in [0, 1]
  double text_seconds = 0, loop_seconds = 0, decode_seconds = 0;  // where the time went
};

Result<ImagineResult> imagine(Pipeline& p, const ImagineOptions& opt);

// The latents' shape [C, h, w] for an image of height x width pixels (0:
// the UNet's sample_size times the VAE's scale); an error names a size the
// VAE's scale does not divide. A video pipeline's (makes_video):
// [C, f, h, w] for `frames` frames (0: 81; 480 x 832 pixels where not
// given, as WanPipeline defaults them), frames one more than a multiple of
// the VAE's temporal scale.
Result<Dims> latent_shape(const Pipeline& p, int64_t height = 0, int64_t width = 0, int64_t frames = 0);
// The VAE's scale: its scale_factor_spatial where its template declares
// one (Wan's), else 2 to the power of its levels less one (8 for SD).
int64_t vae_scale(const Pipeline& p);
// A video VAE's frames per latent frame after the first (its template's
// scale_factor_temporal; Wan's 4); 0 for an image VAE.
int64_t vae_temporal_scale(const Pipeline& p);
// Whether the pipeline makes videos: its denoiser's latents are [C, F, H, W].
bool makes_video(const Pipeline& p);

// A prompt as the pipeline's CLIPTokenizer pads it: bos, the text, eos,
// then the pad token tokenizer_config.json names (SD 1.x <|endoftext|>,
// SD 2 "!"; else the end token) up to the text encoder's length, a longer
// one cut there and ended with eos. `tok_dir`: the pipeline's tokenizer/.
std::vector<int32_t> pipeline_prompt_ids(const Pipeline& p, const Tokenizer& tok, const std::string& tok_dir,
                                         const std::string& text);

// A prompt as SD3's and Flux's T5 tokenizer takes it: the text, </s>,
// padded with the pad token tokenizer_config.json names (else <pad>) to
// `length` (max_sequence_length: SD3 256, Flux 512), a longer one cut
// there and ended with </s>. `tok_dir`: the pipeline's tokenizer_3/ or
// tokenizer_2/. Unpadded (`pad` false): the text's tokens and </s> alone,
// cut likewise (Wan's, whose pipeline masks the padding out).
std::vector<int32_t> t5_prompt_ids(const Tokenizer& tok, const std::string& tok_dir, const std::string& text,
                                   int64_t length, bool pad = true);

// Initial latents of `shape` drawn from N(0, 1) at `seed` (archrun
// imagine's --seed; the server's `seed`).
Tensor seeded_latents(const Dims& shape, uint64_t seed);
// An image [3, H, W] in [0, 1] as the pipeline's latents: VAE-encoded, a
// sample of the posterior (its noise drawn at `seed`), scaled (and shifted)
// as the decoder expects; H and W multiples of the VAE's scale.
Result<Tensor> image_latents(const Pipeline& p, const Tensor& image, uint64_t seed);
// An inpainting mask [1, H, W] in [0, 1] at the latents' size [1, h, w]:
// 1 (made anew) where it is 0.5 or more, nearest-sampled as torch's
// interpolate does.
Result<Tensor> latent_mask(const Tensor& mask, int64_t height, int64_t width);
// An inpainting UNet's channels beside the latents [1 + C, h, w]: the mask
// at the latents' size (latent_mask's), then the latents of the image made
// gray where the mask is white (its posterior sampled at `seed`).
Result<Tensor> inpainting_conditioning(const Pipeline& p, const Tensor& image, const Tensor& mask, const Tensor& mask_latents,
                                       uint64_t seed);
// The seed of the noise an ancestral sampler adds as it steps, from the
// initial latents' seed (a draw of its own, not the latents' again).
uint64_t noise_seed_of(uint64_t seed);

}  // namespace arch

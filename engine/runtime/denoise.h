// The sampling loop of a diffusion denoiser (a template whose graph
// `denoise` takes the latents as `sample` (UNet) or `hidden_states` (DiT,
// SD3, Flux), a `timestep` (i32 or f32) and `encoder_hidden_states`, and
// any other inputs given, such as SD3's `pooled_projections`):
// from the initial latents [C, H, W], one model evaluation per step (two
// with classifier-free guidance: the context, then the negative context,
// combined as uncond + guidance * (cond - uncond)), each followed by the
// scheduler's step back. A template may add the loop's side graphs:
// `pack` (latents [, encoder_hidden_states] -> the latent input and others,
// such as Flux's packed tokens, img_ids and txt_ids), `unpack`
// (tokens, like -> latents) and `timestep` (t: the scheduler's timestep ->
// the model's). A `guidance` input of the denoise graph takes the guidance
// scale itself (a guidance-distilled model: one pass, no negative context).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/session.h"

namespace arch {

struct DenoiseOptions {
  int steps = 20;
  float guidance = 1.0f;            // 1 or no negative context: no guidance (one pass per step)
  Tensor context;                   // encoder_hidden_states [src, width]
  Tensor negative_context;          // absent: no guidance
  NamedTensors extra;               // other inputs of the graph (pooled_projections), with the context
  NamedTensors negative_extra;      // ... and with the negative context
  std::function<void(int step, int steps)> on_step;  // progress
  uint64_t noise_seed = 0;          // the noise a sampler adds per step (Euler ancestral, LCM)
  // Image to image (diffusers' img2img and inpaint pipelines): the loop
  // runs the last int(steps x strength) steps of the schedule, from the
  // image's latents [C, h, w] noised to the first of them by the initial
  // latents (the noise).
  Tensor image_latents;
  float strength = 1.0f;
  // Inpainting ([1, h, w] or [h, w]: 1 where the image is made anew, 0
  // where it is kept): after each step the kept part is the image's
  // latents noised to the next step's level (at the end, themselves), as
  // diffusers does for a UNet of 4 channels. At strength 1 the loop starts
  // from the noise alone, as text to image does.
  Tensor mask;
  // A second denoiser of the same template (Wan 2.2's low-noise expert)
  // that takes the steps whose timestep is below `boundary_timestep`, mixed
  // by `guidance_2`; the first takes the rest.
  const Model* low_noise = nullptr;
  float boundary_timestep = 0.0f;
  float guidance_2 = 1.0f;
  // Channels after the latents in every evaluation's input, the same each
  // step ([Cc, h, w]): an inpainting UNet's mask and masked image's latents
  // (its in_channels are the latents' and these). With image latents, at
  // strength 1 the loop starts from the noise alone, as with a mask.
  Tensor conditioning;
};

struct DenoiseResult {
  Tensor latents;                   // the final [C, H, W]
  Tensor trajectory;                // [steps + 1, C, H, W]: the initial latents, then after each step
  Tensor noise_preds;               // [steps, C, H, W]: the (guided) model output of each step
  std::vector<float> timesteps;     // of the steps run (image to image: the schedule's last ones)
  bool guided = false;              // two passes a step, mixed by the guidance scale
  bool guidance_input = false;      // the scale fed to the model itself (guidance-distilled)
};

// Refused before any of it is made: a guidance scale that is not a number
// from 0 to 100, a loop past check_loop_size, a strength outside (0, 1] or
// one leaving no step, image latents or a mask not the latents' size.
Result<DenoiseResult> denoise(const Model& m, Scheduler& scheduler, const Tensor& initial_latents,
                              const DenoiseOptions& opt);

// A guidance scale mixes uncond + g * (cond - uncond): past some hundreds
// (1e38, say) that is Inf and NaN, an all-black image. A number from 0 to
// 100 passes; the error names it as `name` ("--guidance").
Status check_guidance(float guidance, const std::string& name = "guidance");

// What a loop of `steps` steps over latents of `shape` keeps: its
// trajectory (steps + 1 latents) and every step's noise prediction, within
// the limit 'latent_elements', checked before any of it (or the seeded
// noise) is made; the error gives the figure it would need.
Status check_loop_size(const Dims& shape, int steps);

}  // namespace arch

// The sampling loop of a diffusion denoiser (a template whose graph
// `denoise` takes `sample`, `timestep` and `encoder_hidden_states`):
// from the initial latents, one model evaluation per step (two with
// classifier-free guidance: the negative context, then the context,
// combined as uncond + guidance * (cond - uncond)), each followed by the
// scheduler's step back.
#pragma once

#include <functional>
#include <vector>

#include "runtime/model.h"
#include "runtime/scheduler.h"

namespace arch {

struct DenoiseOptions {
  int steps = 20;
  float guidance = 1.0f;            // 1 or no negative context: no guidance (one pass per step)
  Tensor context;                   // encoder_hidden_states [src, width]
  Tensor negative_context;          // absent: no guidance
  std::function<void(int step, int steps)> on_step;  // progress
};

struct DenoiseResult {
  Tensor latents;                   // the final [C, H, W]
  Tensor trajectory;                // [steps + 1, C, H, W]: the initial latents, then after each step
  Tensor noise_preds;               // [steps, C, H, W]: the (guided) model output of each step
  std::vector<int> timesteps;
};

Result<DenoiseResult> denoise(const Model& m, const DdimScheduler& scheduler, const Tensor& initial_latents,
                              const DenoiseOptions& opt);

}  // namespace arch

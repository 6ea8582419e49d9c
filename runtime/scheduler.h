// Diffusion samplers as diffusers' schedulers define them, read from a
// scheduler_config.json: DDIM (beta schedule, timestep spacing,
// steps_offset, set_alpha_to_one, epsilon or v prediction; eta 0).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/tensor.h"

namespace arch {

class DdimScheduler {
 public:
  // From a scheduler_config.json's fields (_class_name DDIMScheduler; an
  // error names `where` and the field it cannot use).
  static Result<DdimScheduler> from_config(const nlohmann::json& config, const std::string& where);

  // The timesteps of `steps` steps, first to last (diffusers' set_timesteps).
  Result<std::vector<int>> timesteps(int steps) const;
  // One step back from `sample` at timestep t, given the model's output:
  // the sample at the step before (eta 0: deterministic).
  Tensor step(const Tensor& model_output, int t, const Tensor& sample, int steps) const;
  float init_noise_sigma() const { return 1.0f; }

 private:
  std::vector<float> alphas_cumprod_;
  float final_alpha_cumprod_ = 1;
  int train_steps_ = 1000, steps_offset_ = 0;
  std::string spacing_ = "leading", prediction_ = "epsilon";
};

// The scheduler config of a denoiser's folder: its own
// scheduler_config.json, or a pipeline's ../scheduler/scheduler_config.json.
Result<nlohmann::json> read_scheduler_config(const std::string& model_dir, std::string* path = nullptr);

}  // namespace arch

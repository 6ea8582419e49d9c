// Diffusion samplers as diffusers' schedulers define them, read from a
// scheduler_config.json: DDIM (beta schedule, timestep spacing,
// steps_offset, set_alpha_to_one, epsilon or v prediction; eta 0) and
// flow-matching Euler (SD3's: sigmas shifted by `shift`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/tensor.h"

namespace arch {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The timesteps of `steps` steps, first to last (diffusers'
  // set_timesteps); kept for step().
  virtual Result<std::vector<float>> set_timesteps(int steps) = 0;
  // Step `index` back from `sample`, given the model's output there.
  virtual Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) const = 0;
  virtual float init_noise_sigma() const { return 1.0f; }
};

// The scheduler a scheduler_config.json names (_class_name); an error names
// `where` and the field it cannot use.
Result<std::unique_ptr<Scheduler>> make_scheduler(const nlohmann::json& config, const std::string& where);

class DdimScheduler : public Scheduler {
 public:
  static Result<DdimScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps) override;
  // eta 0: deterministic.
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) const override;

 private:
  std::vector<int> timesteps_;
  int steps_ = 0;
  std::vector<float> alphas_cumprod_;
  float final_alpha_cumprod_ = 1;
  int train_steps_ = 1000, steps_offset_ = 0;
  std::string spacing_ = "leading", prediction_ = "epsilon";
};

// FlowMatchEulerDiscreteScheduler: sigmas from 1 down, shifted
// (shift s / (1 + (shift - 1) s)), the model's output a velocity:
// x_next = x + (sigma_next - sigma) v; timesteps are sigma * num_train_timesteps.
class FlowMatchEulerScheduler : public Scheduler {
 public:
  static Result<FlowMatchEulerScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps) override;
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) const override;
  const std::vector<float>& sigmas() const { return sigmas_; }

 private:
  float shifted(float s) const { return shift_ * s / (1.0f + (shift_ - 1.0f) * s); }
  int train_steps_ = 1000;
  float shift_ = 1.0f;
  std::vector<float> sigmas_;
};

// The scheduler config of a denoiser's folder: its own
// scheduler_config.json, or a pipeline's ../scheduler/scheduler_config.json.
Result<nlohmann::json> read_scheduler_config(const std::string& model_dir, std::string* path = nullptr);

}  // namespace arch

// LCMScheduler as diffusers defines it (Luo et al., 2023: latent
// consistency models): timesteps taken evenly by index from the
// distillation schedule (k - 1, 2k - 1, ... for k = T /
// original_inference_steps), each step's x0 mixed with the sample by the
// boundary scalings c_skip and c_out (sigma_data 0.5, timestep_scaling),
// then noised afresh down to the next timestep; the last step's is the
// result itself.
#pragma once

#include "engine/runtime/scheduler.h"

namespace arch {

class LcmScheduler : public Scheduler {
 public:
  static Result<LcmScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) override;
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) override;
  Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const override {
    return schedule_.add_noise(x0, noise, timesteps_.at(index));
  }

 private:
  DdpmSchedule schedule_;
  int original_steps_ = 50;
  double timestep_scaling_ = 10.0;
  float final_alpha_cumprod_ = 1;
  std::vector<int> timesteps_;
};

}  // namespace arch

#include "engine/runtime/lcm_scheduler.h"

#include <cmath>

namespace arch {

Result<LcmScheduler> LcmScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  LcmScheduler s;
  // LCMScheduler's own defaults where the config has none.
  nlohmann::json config = c;
  if (!config.contains("beta_start")) config["beta_start"] = 0.00085;
  if (!config.contains("beta_end")) config["beta_end"] = 0.012;
  if (!config.contains("beta_schedule")) config["beta_schedule"] = "scaled_linear";
  ARCH_TRY(s.schedule_, DdpmSchedule::from_config(config, where, "leading"));
  s.original_steps_ = c.value("original_inference_steps", 50);
  if (s.original_steps_ < 1 || s.original_steps_ > s.schedule_.train_steps)
    return error(where + ": original_inference_steps must be 1 to num_train_timesteps");
  s.timestep_scaling_ = c.value("timestep_scaling", 10.0);
  if (c.value("thresholding", false) || c.value("clip_sample", false))
    return error(where + ": thresholding and clip_sample are not supported");
  s.final_alpha_cumprod_ = c.value("set_alpha_to_one", true) ? 1.0f : s.schedule_.alphas_cumprod[0];
  return s;
}

Result<std::vector<float>> LcmScheduler::set_timesteps(int steps, int64_t) {
  if (steps < 1 || steps > original_steps_)
    return error("LCM's step count must be 1 to original_inference_steps (" + std::to_string(original_steps_) +
                 "), not " + std::to_string(steps));
  // The distillation schedule, last first, and `steps` of it evenly by index.
  const int k = schedule_.train_steps / original_steps_;
  timesteps_.clear();
  for (int i = 0; i < steps; ++i) {
    const int at = int(std::floor(i * (double(original_steps_) / steps)));  // numpy linspace's i * step
    timesteps_.push_back((original_steps_ - at) * k - 1);
  }
  restart_noise();
  return std::vector<float>(timesteps_.begin(), timesteps_.end());
}

Tensor LcmScheduler::step(const Tensor& model_output, size_t index, const Tensor& sample) {
  const std::vector<float>& ac = schedule_.alphas_cumprod;
  const int t = timesteps_.at(index);
  const int prev = index + 1 < timesteps_.size() ? timesteps_[index + 1] : t;
  const float a = ac[size_t(t)], a_prev = prev >= 0 ? ac[size_t(prev)] : final_alpha_cumprod_;
  const float sa = std::sqrt(a), sb = std::sqrt(1.0f - a);
  // The boundary condition's scalings at the scaled timestep.
  const double scaled = double(t) * timestep_scaling_, data = 0.25;
  const float c_skip = float(data / (scaled * scaled + data)), c_out = float(scaled / std::sqrt(scaled * scaled + data));
  // c_out x0 + c_skip x, x0 from epsilon or v: one mix of the sample and the output.
  const Tensor out = schedule_.prediction == "epsilon"
                         ? blend(c_out / sa + c_skip, sample, -c_out * sb / sa, model_output)
                         : blend(c_out * sa + c_skip, sample, -c_out * sb, model_output);
  if (index + 1 == timesteps_.size()) return out;
  return blend(std::sqrt(a_prev), out, std::sqrt(1.0f - a_prev), noise(sample.shape));  // noised afresh to the next timestep
}

}  // namespace arch

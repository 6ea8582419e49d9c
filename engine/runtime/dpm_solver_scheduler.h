// DPMSolverMultistepScheduler as diffusers defines it for DPM-Solver++
// (Lu et al., 2022): the data prediction x0 integrated in log-SNR
// lambda = log(alpha / sigma), first order (DDIM's step) or second order
// over the last two x0 (midpoint or heun), the last step (and, under 15
// steps, the one before) of lower order; sigmas at the spaced timesteps or
// Karras' (use_karras_sigmas: rho 7 between the training sigmas' ends,
// each timestep the training step of its sigma, rounded). A1111's
// "DPM++ 2M" and "DPM++ 2M Karras".
#pragma once

#include "engine/runtime/scheduler.h"

namespace arch {

class DpmSolverScheduler : public Scheduler {
 public:
  static Result<DpmSolverScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) override;
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) override;
  Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const override;
  const std::vector<float>& sigmas() const { return sigmas_; }

 private:
  DdpmSchedule schedule_;
  int order_ = 2;
  bool heun_ = false, lower_order_final_ = true, euler_at_final_ = false, karras_ = false, final_zero_ = true;
  std::vector<float> sigmas_;
  std::vector<Tensor> x0_;  // the data predictions so far, the last two kept
};

// Karras et al.'s sigmas: `steps` of them from sigma_max down to sigma_min,
// evenly in sigma^(1 / rho).
std::vector<double> karras_sigmas(double sigma_min, double sigma_max, int steps, double rho = 7.0);
// The training timestep (fractional) whose sigma is `sigma`: log-sigma
// interpolated between the two training steps around it (diffusers'
// _sigma_to_t; `log_sigmas` rising with t).
double sigma_to_t(double sigma, const std::vector<double>& log_sigmas);

}  // namespace arch

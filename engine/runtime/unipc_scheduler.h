// UniPCMultistepScheduler as diffusers defines it (Zhao et al., 2023:
// unified predictor-corrector) over flow-matching sigmas, as Wan's
// pipelines use it (use_flow_sigmas, prediction_type flow_prediction):
// sigmas 1 - linspace(1, 1 / T, steps + 1), shifted by flow_shift
// (s / (1 + (shift - 1) s)), the last dropped and 0 appended; timesteps
// sigma x T cut to integers. Each step turns the model's velocity into the
// data prediction x0 = x - sigma v, corrects the sample the last step
// made with it (UniC, unless disable_corrector names the step), then
// predicts the next sample (UniP) from the last solver_order x0, in log-SNR
// lambda = log((1 - sigma) / sigma), B(h) = e^h - 1 (bh2) or h (bh1); the
// order warms up from 1 and, with lower_order_final, falls to what the
// steps left allow.
#pragma once

#include "engine/runtime/scheduler.h"

namespace arch {

class UniPcScheduler : public Scheduler {
 public:
  static Result<UniPcScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) override;
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) override;
  // (1 - sigma) x0 + sigma noise, as flow matching noises.
  Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const override;
  const std::vector<float>& sigmas() const { return sigmas_; }

 private:
  // One update of `order` from x at sigma index s0 to index t over the x0
  // kept (the last at s0, the ones before at s0 - 1, ...): UniP's, or
  // UniC's with the new data prediction model_t.
  Tensor update(const Tensor& x, size_t s0, size_t t, int order, bool corrector, const Tensor* model_t) const;
  int order_ = 2, train_steps_ = 1000;
  double shift_ = 1.0;
  bool bh2_ = true, lower_order_final_ = true, final_zero_ = true;
  std::vector<int> disable_corrector_;
  std::vector<float> sigmas_;
  std::vector<Tensor> x0_;            // the data predictions so far, the last order_ kept
  Tensor last_sample_;
  int this_order_ = 1, lower_order_nums_ = 0;
};

}  // namespace arch

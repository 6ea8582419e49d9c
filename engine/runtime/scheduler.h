// Diffusion samplers as diffusers' schedulers define them, read from a
// scheduler_config.json: DDIM (beta schedule, timestep spacing,
// steps_offset, set_alpha_to_one, epsilon or v prediction; eta 0), Euler
// over the same noise schedule (EulerDiscreteScheduler, no churn) and
// flow-matching Euler (SD3's sigmas shifted by `shift`; Flux's by the
// image's size), Euler ancestral; DPM-Solver++ (dpm_solver_scheduler.h),
// LCM (lcm_scheduler.h) and UniPC over flow sigmas (unipc_scheduler.h).
#pragma once

#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The timesteps of `steps` steps, first to last (diffusers'
  // set_timesteps); kept for step(). `image_tokens`: the packed image's
  // token count, for a shift that depends on it (0: not known).
  virtual Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) = 0;
  // Step `index` back from `sample`, given the model's output there (steps
  // in order: a multistep sampler keeps the outputs before).
  virtual Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) = 0;
  // The initial noise's scale (after set_timesteps), and the model's input
  // at step `index` (the sample itself for all but Euler's sigma scaling).
  virtual float init_noise_sigma() const { return 1.0f; }
  virtual Tensor scale_model_input(const Tensor& sample, size_t) const { return sample; }
  // Clean latents x0 noised to the noise level of step `index` (after
  // set_timesteps; diffusers' add_noise, or scale_noise for flow
  // matching): where image to image starts, and what inpainting keeps.
  virtual Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const = 0;
  // The noise a sampler adds as it steps (Euler ancestral, LCM) is drawn
  // from N(0, 1) at this seed, from set_timesteps on; the others add none.
  void seed_noise(uint64_t seed) { noise_seed_ = seed; }

 protected:
  // N(0, 1) of `shape`, the next draw since set_timesteps.
  Tensor noise(const Dims& shape);
  void restart_noise() { rng_.seed(noise_seed_); }

 private:
  uint64_t noise_seed_ = 0;
  std::mt19937_64 rng_;
};

// The scheduler a scheduler_config.json names (_class_name); an error names
// `where` and the field it cannot use. `kind` (empty: the config's own)
// samples the config's noise schedule by another method (archrun's
// --scheduler; scheduler_kinds()): euler on a DDPM-style schedule is
// EulerDiscreteScheduler, on a flow-matching one the flow-matching Euler.
Result<std::unique_ptr<Scheduler>> make_scheduler(const nlohmann::json& config, const std::string& where,
                                                  const std::string& kind = "");
// --scheduler's names, each with the diffusers class it runs: ddim, euler,
// euler_a, dpm++2m, dpm++2m_karras, lcm.
const std::vector<std::pair<std::string, std::string>>& scheduler_kinds();

// a x + b y, element by element: a noise level's mix of clean latents and
// noise (add_noise), and the other samplers' two-term updates.
Tensor blend(float a, const Tensor& x, float b, const Tensor& y);

// The noise schedule DDIM, Euler, DPM-Solver++ and LCM share, read from a
// DDPM-style config:
// the alphas' cumulative product of its beta schedule, the timestep
// spacing and offset, the prediction type.
struct DdpmSchedule {
  std::vector<float> alphas_cumprod;
  int train_steps = 1000, steps_offset = 0;
  std::string spacing = "leading", prediction = "epsilon";

  // x0 noised to training step t: sqrt(a_t) x0 + sqrt(1 - a_t) noise.
  Tensor add_noise(const Tensor& x0, const Tensor& noise, int t) const;
  // `spacing`: the sampler's own default, where the config names none.
  static Result<DdpmSchedule> from_config(const nlohmann::json& config, const std::string& where,
                                          const std::string& spacing = "leading");
  // The training sigmas sqrt((1 - a) / a), one per training step.
  std::vector<float> sigmas() const;
  // The training sigma at a fractional timestep t, linearly between the
  // steps around it (np.interp), t held to [0, T - 1].
  static double sigma_at(const std::vector<float>& train, double t);
  // diffusers' spacings, first to last: "leading" (multiples of T / steps,
  // plus steps_offset), "trailing" (from T - 1 down), "linspace" (0 to T - 1
  // evenly, unrounded: DDIM rounds them).
  Result<std::vector<double>> timesteps(int steps) const;
};

class DdimScheduler : public Scheduler {
 public:
  static Result<DdimScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) override;
  // eta 0: deterministic.
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) override;
  Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const override;

 private:
  DdpmSchedule schedule_;
  std::vector<int> timesteps_;
  int steps_ = 0;
  float final_alpha_cumprod_ = 1;
};

// EulerDiscreteScheduler (s_churn 0): sigmas sqrt((1 - a) / a) at the
// spaced timesteps, the model fed x / sqrt(sigma^2 + 1),
// x_next = x + (x - x0) / sigma * (sigma_next - sigma).
class EulerScheduler : public Scheduler {
 public:
  static Result<EulerScheduler> from_config(const nlohmann::json& config, const std::string& where);
  // Euler ancestral's step (EulerAncestralDiscreteScheduler): to
  // sigma_down, then noise of sigma_up, so that sigma_down^2 + sigma_up^2
  // is the next sigma's square.
  bool ancestral = false;
  Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) override;
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) override;
  float init_noise_sigma() const override;
  Tensor scale_model_input(const Tensor& sample, size_t index) const override;
  Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const override;
  const std::vector<float>& sigmas() const { return sigmas_; }

 private:
  DdpmSchedule schedule_;
  std::vector<float> sigmas_;
};

// FlowMatchEulerDiscreteScheduler: sigmas from 1 down, shifted
// (shift s / (1 + (shift - 1) s), or with use_dynamic_shifting FluxPipeline's
// exp(mu) / (exp(mu) + 1 / s - 1), mu from the image's token count), the
// model's output a velocity: x_next = x + (sigma_next - sigma) v; timesteps
// are sigma * num_train_timesteps.
class FlowMatchEulerScheduler : public Scheduler {
 public:
  static Result<FlowMatchEulerScheduler> from_config(const nlohmann::json& config, const std::string& where);
  Result<std::vector<float>> set_timesteps(int steps, int64_t image_tokens = 0) override;
  Tensor step(const Tensor& model_output, size_t index, const Tensor& sample) override;
  Tensor add_noise(const Tensor& x0, const Tensor& noise, size_t index) const override;
  const std::vector<float>& sigmas() const { return sigmas_; }

 private:
  float shifted(float s) const { return shift_ * s / (1.0f + (shift_ - 1.0f) * s); }
  int train_steps_ = 1000;
  float shift_ = 1.0f;
  bool dynamic_ = false;
  double base_shift_ = 0.5, max_shift_ = 1.15;
  int64_t base_tokens_ = 256, max_tokens_ = 4096;
  std::vector<float> sigmas_;
};

// The scheduler config of a denoiser's folder (its own
// scheduler_config.json, or a pipeline's ../scheduler/scheduler_config.json),
// or the config file `where` names.
Result<nlohmann::json> read_scheduler_config(const std::string& where, std::string* path = nullptr);

}  // namespace arch

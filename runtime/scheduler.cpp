#include "runtime/scheduler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fstream>
#include <sstream>

#include "core/json_text.h"

namespace arch {

namespace fs = std::filesystem;

Result<DdimScheduler> DdimScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  if (!c.is_object()) return error(where + ": a scheduler config is a JSON object");
  DdimScheduler s;
  s.train_steps_ = c.value("num_train_timesteps", 1000);
  if (s.train_steps_ < 1) return error(where + ": num_train_timesteps must be positive");
  const double b0 = c.value("beta_start", 0.0001), b1 = c.value("beta_end", 0.02);
  const std::string schedule = c.value("beta_schedule", std::string("linear"));
  if (c.contains("trained_betas") && !c["trained_betas"].is_null()) return error(where + ": trained_betas are not supported");
  if (c.value("rescale_betas_zero_snr", false)) return error(where + ": rescale_betas_zero_snr is not supported");
  if (c.value("thresholding", false) || c.value("clip_sample", false))
    return error(where + ": thresholding and clip_sample are not supported");
  // betas in float32, as torch.linspace makes them
  std::vector<float> betas(size_t(s.train_steps_));
  const int n = s.train_steps_;
  for (int i = 0; i < n; ++i) {
    const double f = n == 1 ? 0.0 : double(i) / double(n - 1);
    if (schedule == "linear") {
      betas[size_t(i)] = float(b0 + (b1 - b0) * f);
    } else if (schedule == "scaled_linear") {
      const float r = float(std::sqrt(b0) + (std::sqrt(b1) - std::sqrt(b0)) * f);
      betas[size_t(i)] = r * r;
    } else {
      return error(where + ": beta_schedule '" + schedule + "' is not one archrun knows (linear, scaled_linear)");
    }
  }
  float prod = 1.0f;
  for (float b : betas) s.alphas_cumprod_.push_back(prod *= (1.0f - b));
  s.final_alpha_cumprod_ = c.value("set_alpha_to_one", true) ? 1.0f : s.alphas_cumprod_[0];
  s.steps_offset_ = c.value("steps_offset", 0);
  s.spacing_ = c.value("timestep_spacing", std::string("leading"));
  s.prediction_ = c.value("prediction_type", std::string("epsilon"));
  if (s.prediction_ != "epsilon" && s.prediction_ != "v_prediction")
    return error(where + ": prediction_type '" + s.prediction_ + "' is not one archrun knows (epsilon, v_prediction)");
  if (s.spacing_ != "leading" && s.spacing_ != "trailing" && s.spacing_ != "linspace")
    return error(where + ": timestep_spacing '" + s.spacing_ + "' is not one archrun knows (leading, trailing, linspace)");
  return s;
}

Result<std::vector<float>> DdimScheduler::set_timesteps(int steps) {
  if (steps < 1 || steps > train_steps_)
    return error("the step count must be 1 to num_train_timesteps (" + std::to_string(train_steps_) + "), not " + std::to_string(steps));
  std::vector<int> ts;
  if (spacing_ == "leading") {
    const int ratio = train_steps_ / steps;
    for (int i = steps - 1; i >= 0; --i) ts.push_back(i * ratio + steps_offset_);
  } else if (spacing_ == "trailing") {
    const double ratio = double(train_steps_) / steps;
    for (int i = 0; i < steps; ++i) ts.push_back(int(std::round(train_steps_ - i * ratio)) - 1);
  } else {
    for (int i = steps - 1; i >= 0; --i)
      ts.push_back(int(std::round(steps == 1 ? 0.0 : double(train_steps_ - 1) * i / (steps - 1))));
  }
  timesteps_ = ts;
  steps_ = steps;
  return std::vector<float>(ts.begin(), ts.end());
}

Tensor DdimScheduler::step(const Tensor& eps, size_t index, const Tensor& sample) const {
  const int t = timesteps_.at(index);
  const int prev = t - train_steps_ / steps_;
  const float a = alphas_cumprod_[size_t(std::clamp(t, 0, train_steps_ - 1))];
  const float a_prev = prev >= 0 ? alphas_cumprod_[size_t(prev)] : final_alpha_cumprod_;
  const float b = 1.0f - a;
  const float sa = std::sqrt(a), sb = std::sqrt(b), sa_prev = std::sqrt(a_prev), dir = std::sqrt(1.0f - a_prev);
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const float x = sample.f32()[i], e = eps.f32()[i];
    float x0, pe;
    if (prediction_ == "epsilon") {
      x0 = (x - sb * e) / sa;  // the predicted original sample
      pe = e;
    } else {  // v_prediction
      x0 = sa * x - sb * e;
      pe = sa * e + sb * x;
    }
    out.f32()[i] = sa_prev * x0 + dir * pe;
  }
  return out;
}

Result<FlowMatchEulerScheduler> FlowMatchEulerScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  FlowMatchEulerScheduler s;
  s.train_steps_ = c.value("num_train_timesteps", 1000);
  if (s.train_steps_ < 1) return error(where + ": num_train_timesteps must be positive");
  s.shift_ = float(c.value("shift", 1.0));
  if (!(s.shift_ > 0)) return error(where + ": shift must be positive");
  if (c.value("use_dynamic_shifting", false))
    return error(where + ": use_dynamic_shifting (Flux's resolution-dependent shift) is not supported");
  for (const char* f : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "invert_sigmas"})
    if (c.value(f, false)) return error(where + ": " + std::string(f) + " is not supported");
  if (c.contains("shift_terminal") && !c["shift_terminal"].is_null()) return error(where + ": shift_terminal is not supported");
  return s;
}

Result<std::vector<float>> FlowMatchEulerScheduler::set_timesteps(int steps) {
  if (steps < 1 || steps > train_steps_)
    return error("the step count must be 1 to num_train_timesteps (" + std::to_string(train_steps_) + "), not " + std::to_string(steps));
  // The training sigmas' ends, shifted (1 and shift(1 / T)); the steps
  // evenly between them, shifted again (as diffusers does), then 0.
  const float T = float(train_steps_);
  const float sigma_max = shifted(1.0f), sigma_min = shifted(1.0f / T);
  sigmas_.clear();
  std::vector<float> ts;
  for (int i = 0; i < steps; ++i) {
    const double f = steps == 1 ? 0.0 : double(i) / double(steps - 1);
    const float t = float(double(sigma_max * T) + (double(sigma_min * T) - double(sigma_max * T)) * f);
    const float sigma = shifted(t / T);
    sigmas_.push_back(sigma);
    ts.push_back(sigma * T);
  }
  sigmas_.push_back(0.0f);
  return ts;
}

Tensor FlowMatchEulerScheduler::step(const Tensor& v, size_t index, const Tensor& sample) const {
  const float dt = sigmas_.at(index + 1) - sigmas_.at(index);
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  for (int64_t i = 0; i < sample.numel(); ++i) out.f32()[i] = sample.f32()[i] + dt * v.f32()[i];
  return out;
}

Result<std::unique_ptr<Scheduler>> make_scheduler(const nlohmann::json& c, const std::string& where) {
  if (!c.is_object()) return error(where + ": a scheduler config is a JSON object");
  const std::string cls = c.value("_class_name", std::string("DDIMScheduler"));
  if (cls == "DDIMScheduler") {
    ARCH_TRY(DdimScheduler d, DdimScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new DdimScheduler(std::move(d)));
  }
  if (cls == "FlowMatchEulerDiscreteScheduler") {
    ARCH_TRY(FlowMatchEulerScheduler f, FlowMatchEulerScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new FlowMatchEulerScheduler(std::move(f)));
  }
  return error(where + ": scheduler '" + cls + "' is not one archrun runs (DDIMScheduler, FlowMatchEulerDiscreteScheduler)");
}

Result<nlohmann::json> read_scheduler_config(const std::string& model_dir, std::string* path) {
  for (const fs::path p : {fs::path(model_dir) / "scheduler_config.json",
                           fs::path(model_dir) / ".." / "scheduler" / "scheduler_config.json"}) {
    std::error_code ec;
    if (!fs::exists(p, ec)) continue;
    if (path) *path = p.string();
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return error(p.string() + ": cannot read it");
    return parse_json(text.str(), p.string());
  }
  return error(model_dir + ": no scheduler_config.json (beside the model, or a pipeline's scheduler/)");
}

}  // namespace arch

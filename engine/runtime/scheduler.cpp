#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fstream>
#include <sstream>

#include "engine/core/json_text.h"
#include "engine/runtime/dpm_solver_scheduler.h"
#include "engine/runtime/lcm_scheduler.h"
#include "engine/runtime/unipc_scheduler.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

// The alphas' cumulative product of a config's beta schedule (betas in
// float32, as torch.linspace makes them); DDIM and Euler share it.
Result<std::vector<float>> alphas_cumprod_of(const nlohmann::json& c, const std::string& where, int n) {
  const double b0 = c.value("beta_start", 0.0001), b1 = c.value("beta_end", 0.02);
  const std::string schedule = c.value("beta_schedule", std::string("linear"));
  if (c.contains("trained_betas") && !c["trained_betas"].is_null()) return error(where + ": trained_betas are not supported");
  if (c.value("rescale_betas_zero_snr", false)) return error(where + ": rescale_betas_zero_snr is not supported");
  std::vector<float> out;
  float prod = 1.0f;
  for (int i = 0; i < n; ++i) {
    const double f = n == 1 ? 0.0 : double(i) / double(n - 1);
    float beta;
    if (schedule == "linear") {
      beta = float(b0 + (b1 - b0) * f);
    } else if (schedule == "scaled_linear") {
      const float r = float(std::sqrt(b0) + (std::sqrt(b1) - std::sqrt(b0)) * f);
      beta = r * r;
    } else {
      return error(where + ": beta_schedule '" + schedule + "' is not one archrun knows (linear, scaled_linear)");
    }
    out.push_back(prod *= (1.0f - beta));
  }
  return out;
}

Status check_steps(int steps, int train_steps) {
  if (steps < 1 || steps > train_steps)
    return error("the step count must be 1 to num_train_timesteps (" + std::to_string(train_steps) + "), not " +
                 std::to_string(steps));
  return {};
}

}  // namespace

Tensor Scheduler::noise(const Dims& shape) {
  Tensor t = Tensor::zeros(DType::F32, shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng_);
  return t;
}

Result<DdpmSchedule> DdpmSchedule::from_config(const nlohmann::json& c, const std::string& where,
                                               const std::string& spacing) {
  if (!c.is_object()) return error(where + ": a scheduler config is a JSON object");
  DdpmSchedule s;
  s.train_steps = c.value("num_train_timesteps", 1000);
  if (s.train_steps < 1) return error(where + ": num_train_timesteps must be positive");
  ARCH_TRY(s.alphas_cumprod, alphas_cumprod_of(c, where, s.train_steps));
  s.steps_offset = c.value("steps_offset", 0);
  s.spacing = c.value("timestep_spacing", spacing);
  if (s.spacing != "leading" && s.spacing != "trailing" && s.spacing != "linspace")
    return error(where + ": timestep_spacing '" + s.spacing + "' is not one archrun knows (leading, trailing, linspace)");
  s.prediction = c.value("prediction_type", std::string("epsilon"));
  if (s.prediction != "epsilon" && s.prediction != "v_prediction")
    return error(where + ": prediction_type '" + s.prediction + "' is not one archrun knows (epsilon, v_prediction)");
  return s;
}

std::vector<float> DdpmSchedule::sigmas() const {
  std::vector<float> out;
  for (float a : alphas_cumprod) out.push_back(std::sqrt((1.0f - a) / a));
  return out;
}

double DdpmSchedule::sigma_at(const std::vector<float>& train, double t) {
  const double c = std::clamp(t, 0.0, double(train.size() - 1));
  const size_t lo = size_t(std::floor(c)), hi = std::min(lo + 1, train.size() - 1);
  return double(train[lo]) + (double(train[hi]) - double(train[lo])) * (c - double(lo));
}

Tensor blend(float a, const Tensor& x, float b, const Tensor& y) {
  Tensor out = Tensor::zeros(DType::F32, x.shape);
  const float *px = x.f32(), *py = y.f32();
  float* o = out.f32();
  for (int64_t i = 0; i < out.numel(); ++i) o[i] = a * px[i] + b * py[i];
  return out;
}

Tensor DdpmSchedule::add_noise(const Tensor& x0, const Tensor& noise, int t) const {
  const float a = alphas_cumprod[size_t(std::clamp(t, 0, train_steps - 1))];
  return blend(std::sqrt(a), x0, std::sqrt(1.0f - a), noise);
}

Result<std::vector<double>> DdpmSchedule::timesteps(int steps) const {
  ARCH_TRY_STATUS(check_steps(steps, train_steps));
  std::vector<double> ts;
  if (spacing == "leading") {
    const int ratio = train_steps / steps;
    for (int i = steps - 1; i >= 0; --i) ts.push_back(double(i * ratio + steps_offset));
  } else if (spacing == "trailing") {
    const double ratio = double(train_steps) / steps;
    for (int i = 0; i < steps; ++i) ts.push_back(std::nearbyint(train_steps - i * ratio) - 1);  // numpy's round
  } else {
    for (int i = steps - 1; i >= 0; --i) ts.push_back(steps == 1 ? 0.0 : double(train_steps - 1) * i / (steps - 1));
  }
  return ts;
}

Result<DdimScheduler> DdimScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  DdimScheduler s;
  ARCH_TRY(s.schedule_, DdpmSchedule::from_config(c, where));
  if (c.value("thresholding", false) || c.value("clip_sample", false))
    return error(where + ": thresholding and clip_sample are not supported");
  s.final_alpha_cumprod_ = c.value("set_alpha_to_one", true) ? 1.0f : s.schedule_.alphas_cumprod[0];
  return s;
}

Result<std::vector<float>> DdimScheduler::set_timesteps(int steps, int64_t) {
  ARCH_TRY(std::vector<double> spaced, schedule_.timesteps(steps));
  timesteps_.clear();
  for (double t : spaced) timesteps_.push_back(int(std::round(t)));
  steps_ = steps;
  return std::vector<float>(timesteps_.begin(), timesteps_.end());
}

Tensor DdimScheduler::step(const Tensor& eps, size_t index, const Tensor& sample) {
  const std::vector<float>& ac = schedule_.alphas_cumprod;
  const int t = timesteps_.at(index);
  const int prev = t - schedule_.train_steps / steps_;
  const float a = ac[size_t(std::clamp(t, 0, schedule_.train_steps - 1))];
  const float a_prev = prev >= 0 ? ac[size_t(prev)] : final_alpha_cumprod_;
  const float b = 1.0f - a;
  const float sa = std::sqrt(a), sb = std::sqrt(b), sa_prev = std::sqrt(a_prev), dir = std::sqrt(1.0f - a_prev);
  const bool epsilon = schedule_.prediction == "epsilon";
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const float x = sample.f32()[i], e = eps.f32()[i];
    float x0, pe;
    if (epsilon) {
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

Tensor DdimScheduler::add_noise(const Tensor& x0, const Tensor& noise, size_t index) const {
  return schedule_.add_noise(x0, noise, timesteps_.at(index));
}

Result<FlowMatchEulerScheduler> FlowMatchEulerScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  FlowMatchEulerScheduler s;
  s.train_steps_ = c.value("num_train_timesteps", 1000);
  if (s.train_steps_ < 1) return error(where + ": num_train_timesteps must be positive");
  s.shift_ = float(c.value("shift", 1.0));
  if (!(s.shift_ > 0)) return error(where + ": shift must be positive");
  s.dynamic_ = c.value("use_dynamic_shifting", false);
  s.base_shift_ = c.value("base_shift", 0.5);
  s.max_shift_ = c.value("max_shift", 1.15);
  s.base_tokens_ = c.value("base_image_seq_len", 256);
  s.max_tokens_ = c.value("max_image_seq_len", 4096);
  if (s.dynamic_ && s.max_tokens_ == s.base_tokens_)
    return error(where + ": base_image_seq_len and max_image_seq_len must differ");
  for (const char* f : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "invert_sigmas"})
    if (c.value(f, false)) return error(where + ": " + std::string(f) + " is not supported");
  if (c.contains("shift_terminal") && !c["shift_terminal"].is_null()) return error(where + ": shift_terminal is not supported");
  return s;
}

Result<std::vector<float>> FlowMatchEulerScheduler::set_timesteps(int steps, int64_t image_tokens) {
  ARCH_TRY_STATUS(check_steps(steps, train_steps_));
  const float T = float(train_steps_);
  sigmas_.clear();
  std::vector<float> ts;
  if (dynamic_) {
    // FluxPipeline's schedule: sigmas evenly from 1 to 1 / steps, shifted
    // by exp(mu) / (exp(mu) + 1 / s - 1), mu linear in the image's token
    // count between (base_image_seq_len, base_shift) and (max_..., max_shift).
    if (image_tokens < 1)
      return error("this scheduler's shift depends on the image's size (use_dynamic_shifting): the model gives no token count");
    const double slope = (max_shift_ - base_shift_) / double(max_tokens_ - base_tokens_);
    const double mu = base_shift_ + slope * double(image_tokens - base_tokens_);
    for (int i = 0; i < steps; ++i) {
      const double s = steps == 1 ? 1.0 : 1.0 + (1.0 / steps - 1.0) * double(i) / double(steps - 1);
      const float sigma = float(std::exp(mu) / (std::exp(mu) + (1.0 / s - 1.0)));
      sigmas_.push_back(sigma);
      ts.push_back(sigma * T);
    }
    sigmas_.push_back(0.0f);
    return ts;
  }
  // The training sigmas' ends, shifted (1 and shift(1 / T)); the steps
  // evenly between them, shifted again (as diffusers does), then 0.
  const float sigma_max = shifted(1.0f), sigma_min = shifted(1.0f / T);
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

Tensor FlowMatchEulerScheduler::step(const Tensor& v, size_t index, const Tensor& sample) {
  const float dt = sigmas_.at(index + 1) - sigmas_.at(index);
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  for (int64_t i = 0; i < sample.numel(); ++i) out.f32()[i] = sample.f32()[i] + dt * v.f32()[i];
  return out;
}

Tensor FlowMatchEulerScheduler::add_noise(const Tensor& x0, const Tensor& noise, size_t index) const {
  const float sigma = sigmas_.at(index);  // scale_noise: sigma noise + (1 - sigma) x0
  return blend(1.0f - sigma, x0, sigma, noise);
}

Result<EulerScheduler> EulerScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  EulerScheduler s;
  ARCH_TRY(s.schedule_, DdpmSchedule::from_config(c, where, "linspace"));
  for (const char* f : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas"})
    if (c.value(f, false)) return error(where + ": " + std::string(f) + " is not supported");
  if (c.value("interpolation_type", std::string("linear")) != "linear")
    return error(where + ": interpolation_type must be linear");
  if (c.value("final_sigmas_type", std::string("zero")) != "zero") return error(where + ": final_sigmas_type must be zero");
  return s;
}

Result<std::vector<float>> EulerScheduler::set_timesteps(int steps, int64_t) {
  ARCH_TRY(std::vector<double> spaced, schedule_.timesteps(steps));
  // The training sigmas sqrt((1 - a) / a), read at the timesteps by linear
  // interpolation, then 0.
  const std::vector<float> train = schedule_.sigmas();
  restart_noise();
  sigmas_.clear();
  std::vector<float> ts;
  for (double t : spaced) {
    sigmas_.push_back(float(DdpmSchedule::sigma_at(train, t)));
    ts.push_back(float(t));
  }
  sigmas_.push_back(0.0f);
  return ts;
}

float EulerScheduler::init_noise_sigma() const {
  const float top = sigmas_.empty() ? 1.0f : *std::max_element(sigmas_.begin(), sigmas_.end());
  return schedule_.spacing == "leading" ? std::sqrt(top * top + 1.0f) : top;
}

Tensor EulerScheduler::scale_model_input(const Tensor& sample, size_t index) const {
  const float k = 1.0f / std::sqrt(sigmas_.at(index) * sigmas_.at(index) + 1.0f);
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  for (int64_t i = 0; i < sample.numel(); ++i) out.f32()[i] = sample.f32()[i] * k;
  return out;
}

Tensor EulerScheduler::add_noise(const Tensor& x0, const Tensor& noise, size_t index) const {
  return blend(1.0f, x0, sigmas_.at(index), noise);
}

Tensor EulerScheduler::step(const Tensor& model_output, size_t index, const Tensor& sample) {
  const float sigma = sigmas_.at(index), next = sigmas_.at(index + 1);
  // Ancestral: down to sigma_down, then up by fresh noise of sigma_up.
  const float up = ancestral ? std::sqrt(next * next * (sigma * sigma - next * next) / (sigma * sigma)) : 0.0f;
  const float dt = (ancestral ? std::sqrt(next * next - up * up) : next) - sigma;
  const bool epsilon = schedule_.prediction == "epsilon";
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  for (int64_t i = 0; i < sample.numel(); ++i) {
    const float x = sample.f32()[i], e = model_output.f32()[i];
    // the predicted original sample, then the derivative (x - x0) / sigma
    const float x0 = epsilon
                         ? x - sigma * e
                         : e * (-sigma / std::sqrt(sigma * sigma + 1.0f)) + x / (sigma * sigma + 1.0f);
    out.f32()[i] = x + (x - x0) / sigma * dt;
  }
  return ancestral ? blend(1.0f, out, up, noise(sample.shape)) : out;
}

const std::vector<std::pair<std::string, std::string>>& scheduler_kinds() {
  static const std::vector<std::pair<std::string, std::string>> kinds = {
      {"ddim", "DDIMScheduler"},
      {"euler", "EulerDiscreteScheduler"},
      {"euler_a", "EulerAncestralDiscreteScheduler"},
      {"dpm++2m", "DPMSolverMultistepScheduler"},
      {"dpm++2m_karras", "DPMSolverMultistepScheduler"},
      {"lcm", "LCMScheduler"},
  };
  return kinds;
}

Result<std::unique_ptr<Scheduler>> make_scheduler(const nlohmann::json& config, const std::string& where,
                                                  const std::string& kind) {
  if (!config.is_object()) return error(where + ": a scheduler config is a JSON object");
  nlohmann::json c = config;
  std::string cls = c.value("_class_name", std::string("DDIMScheduler"));
  bool flow = cls == "FlowMatchEulerDiscreteScheduler";
  // UniPC over flow sigmas (Wan's) is a flow-matching schedule: --scheduler
  // euler samples it by flow-matching Euler at its flow_shift.
  const bool flow_unipc = cls == "UniPCMultistepScheduler" && c.value("use_flow_sigmas", false);
  if (flow_unipc && !kind.empty()) {
    c = {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"num_train_timesteps", c.value("num_train_timesteps", 1000)},
         {"shift", c.value("flow_shift", 1.0)}};
    cls = c["_class_name"];
    flow = true;
  }
  // --scheduler: the same noise schedule, sampled by another method (its
  // fields as the config has them, the method's own defaults for the rest,
  // as diffusers' from_config does).
  if (!kind.empty()) {
    const auto& kinds = scheduler_kinds();
    auto k = std::find_if(kinds.begin(), kinds.end(), [&](const auto& e) { return e.first == kind; });
    if (k == kinds.end()) {
      std::string names;
      for (const auto& [name, _] : kinds) names += (names.empty() ? "" : ", ") + name;
      return error("--scheduler '" + kind + "' is not one archrun knows (" + names + ")");
    }
    if (flow && kind != "euler")
      return error(where + ": a flow-matching model's scheduler cannot be sampled by " + kind + " (use euler)");
    if (!flow) {
      cls = k->second;
      if (kind == "dpm++2m_karras") c["use_karras_sigmas"] = true;
      if (kind == "dpm++2m") c["use_karras_sigmas"] = false;
    }
  }
  if (cls == "DDIMScheduler") {
    ARCH_TRY(DdimScheduler d, DdimScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new DdimScheduler(std::move(d)));
  }
  if (cls == "EulerDiscreteScheduler" || cls == "EulerAncestralDiscreteScheduler") {
    ARCH_TRY(EulerScheduler e, EulerScheduler::from_config(c, where));
    e.ancestral = cls == "EulerAncestralDiscreteScheduler";
    return std::unique_ptr<Scheduler>(new EulerScheduler(std::move(e)));
  }
  if (cls == "DPMSolverMultistepScheduler") {
    ARCH_TRY(DpmSolverScheduler d, DpmSolverScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new DpmSolverScheduler(std::move(d)));
  }
  if (cls == "LCMScheduler") {
    ARCH_TRY(LcmScheduler l, LcmScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new LcmScheduler(std::move(l)));
  }
  if (flow) {
    ARCH_TRY(FlowMatchEulerScheduler f, FlowMatchEulerScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new FlowMatchEulerScheduler(std::move(f)));
  }
  if (cls == "UniPCMultistepScheduler") {
    ARCH_TRY(UniPcScheduler u, UniPcScheduler::from_config(c, where));
    return std::unique_ptr<Scheduler>(new UniPcScheduler(std::move(u)));
  }
  return error(where + ": scheduler '" + cls +
               "' is not one archrun runs (DDIMScheduler, EulerDiscreteScheduler, EulerAncestralDiscreteScheduler, "
               "DPMSolverMultistepScheduler, LCMScheduler, FlowMatchEulerDiscreteScheduler, UniPCMultistepScheduler over flow "
               "sigmas; --scheduler samples its noise schedule another way)");
}

Result<nlohmann::json> read_scheduler_config(const std::string& where, std::string* path) {
  // A file is the config itself; a folder holds it, or its pipeline does.
  std::error_code ec;
  std::vector<fs::path> candidates = {fs::path(where)};
  if (fs::is_directory(where, ec))
    candidates = {fs::path(where) / "scheduler_config.json", fs::path(where) / ".." / "scheduler" / "scheduler_config.json"};
  for (const fs::path& p : candidates) {
    if (!fs::exists(p, ec)) continue;
    if (path) *path = p.string();
    std::ifstream in(p);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return error(p.string() + ": cannot read it");
    return parse_json(text.str(), p.string());
  }
  if (!fs::is_directory(where, ec)) return error(where + ": no such scheduler config");
  return error(where + ": no scheduler_config.json (beside the model, or a pipeline's scheduler/; or give --scheduler-config)");
}

}  // namespace arch

#include "engine/runtime/dpm_solver_scheduler.h"

#include <algorithm>
#include <cmath>

namespace arch {

std::vector<double> karras_sigmas(double sigma_min, double sigma_max, int steps, double rho) {
  const double lo = std::pow(sigma_min, 1.0 / rho), hi = std::pow(sigma_max, 1.0 / rho);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    const double ramp = steps == 1 ? 0.0 : double(i) / double(steps - 1);
    out.push_back(std::pow(hi + ramp * (lo - hi), rho));
  }
  return out;
}

double sigma_to_t(double sigma, const std::vector<double>& log_sigmas) {
  const double ls = std::log(std::max(sigma, 1e-10));
  const size_t n = log_sigmas.size();
  if (n < 2) return 0.0;
  // The last training step whose log-sigma is at most ls (0 where none),
  // and the one after it.
  size_t low = 0;
  for (size_t i = 0; i < n; ++i)
    if (ls - log_sigmas[i] >= 0) low = i;
  low = std::min(low, n - 2);
  const double a = log_sigmas[low], b = log_sigmas[low + 1];
  const double w = std::clamp((a - ls) / (a - b), 0.0, 1.0);
  return (1.0 - w) * double(low) + w * double(low + 1);
}

Result<DpmSolverScheduler> DpmSolverScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  DpmSolverScheduler s;
  ARCH_TRY(s.schedule_, DdpmSchedule::from_config(c, where, "linspace"));
  s.order_ = c.value("solver_order", 2);
  if (s.order_ != 1 && s.order_ != 2)
    return error(where + ": solver_order " + std::to_string(s.order_) + " is not supported (1 or 2: DPM++ 2M)");
  const std::string algorithm = c.value("algorithm_type", std::string("dpmsolver++"));
  if (algorithm != "dpmsolver++" && algorithm != "deis")  // diffusers runs deis as dpmsolver++
    return error(where + ": algorithm_type '" + algorithm + "' is not supported (dpmsolver++)");
  const std::string solver = c.value("solver_type", std::string("midpoint"));
  if (solver != "midpoint" && solver != "heun" && solver != "logrho" && solver != "bh1" && solver != "bh2")
    return error(where + ": solver_type '" + solver + "' is not one archrun knows (midpoint, heun)");
  s.heun_ = solver == "heun";
  s.lower_order_final_ = c.value("lower_order_final", true);
  s.euler_at_final_ = c.value("euler_at_final", false);
  s.karras_ = c.value("use_karras_sigmas", false);
  const std::string final_sigmas = c.value("final_sigmas_type", std::string("zero"));
  if (final_sigmas != "zero" && final_sigmas != "sigma_min")
    return error(where + ": final_sigmas_type must be zero or sigma_min, not '" + final_sigmas + "'");
  s.final_zero_ = final_sigmas == "zero";
  for (const char* f : {"thresholding", "use_lu_lambdas", "use_exponential_sigmas", "use_beta_sigmas"})
    if (c.value(f, false)) return error(where + ": " + std::string(f) + " is not supported");
  if (c.contains("variance_type") && !c["variance_type"].is_null())
    return error(where + ": variance_type is not supported (a model predicting its variance)");
  if (c.contains("lambda_min_clipped") && c["lambda_min_clipped"].is_number() &&
      std::isfinite(c["lambda_min_clipped"].get<double>()))
    return error(where + ": lambda_min_clipped is not supported");
  return s;
}

Result<std::vector<float>> DpmSolverScheduler::set_timesteps(int steps, int64_t) {
  const DdpmSchedule& d = schedule_;
  if (steps < 1 || steps >= d.train_steps)  // leading and linspace take steps + 1 points
    return error("the step count must be 1 to num_train_timesteps - 1 (" + std::to_string(d.train_steps - 1) + "), not " +
                 std::to_string(steps));
  // Integer timesteps: trailing as DDIM spaces them; leading and linspace
  // over steps + 1 points, the last dropped, rounded (numpy's round: half
  // to even).
  std::vector<double> ts;
  if (d.spacing == "trailing") {
    ARCH_TRY(ts, d.timesteps(steps));
  } else {
    ARCH_TRY(ts, d.timesteps(steps + 1));
    ts.pop_back();
    for (double& t : ts) t = std::nearbyint(t);
  }
  const std::vector<float> train = d.sigmas();
  std::vector<double> sig;
  if (karras_) {
    std::vector<double> log_sigmas;
    for (float s : train) log_sigmas.push_back(std::log(double(s)));
    sig = karras_sigmas(train.front(), train.back(), steps);
    ts.clear();
    for (double s : sig) ts.push_back(std::nearbyint(sigma_to_t(s, log_sigmas)));
  } else {
    for (double t : ts) sig.push_back(DdpmSchedule::sigma_at(train, t));
  }
  sigmas_.clear();
  for (double s : sig) sigmas_.push_back(float(s));
  sigmas_.push_back(final_zero_ ? 0.0f : train.front());
  x0_.clear();
  return std::vector<float>(ts.begin(), ts.end());
}

Tensor DpmSolverScheduler::add_noise(const Tensor& x0, const Tensor& noise, size_t index) const {
  const double s = sigmas_.at(index), alpha = 1.0 / std::sqrt(s * s + 1.0);
  return blend(float(alpha), x0, float(s * alpha), noise);
}

Tensor DpmSolverScheduler::step(const Tensor& model_output, size_t index, const Tensor& sample) {
  const size_t n = sigmas_.size() - 1;
  // alpha_t = 1 / sqrt(sigma^2 + 1), sigma_t = sigma alpha_t, lambda their log ratio.
  auto alpha_of = [](double s) { return 1.0 / std::sqrt(s * s + 1.0); };
  auto lambda_of = [&](double s) { return std::log(alpha_of(s)) - std::log(s * alpha_of(s)); };
  const double s0 = sigmas_.at(index), st = sigmas_.at(index + 1);
  const double a0 = alpha_of(s0), at = alpha_of(st), sig0 = s0 * a0, sigt = st * at;
  // The data prediction x0.
  Tensor x0 = schedule_.prediction == "epsilon" ? blend(float(1.0 / a0), sample, float(-sig0 / a0), model_output)
                                                 : blend(float(a0), sample, float(-sig0), model_output);
  x0_.push_back(x0);
  if (x0_.size() > 2) x0_.erase(x0_.begin());
  const bool last = index + 1 == n;
  const bool first_order = order_ == 1 || x0_.size() < 2 ||
                           (last && (euler_at_final_ || (lower_order_final_ && n < 15) || final_zero_));
  const double h = lambda_of(st) - lambda_of(s0);  // +inf into sigma 0: exp(-h) = 0
  const double em1 = std::exp(-h) - 1.0;
  if (first_order) return blend(float(st == 0 ? 0.0 : sigt / sig0), sample, float(-at * em1), x0_.back());
  Tensor out = Tensor::zeros(DType::F32, sample.shape);
  const float* m0 = x0_.back().f32();
  // Second order over the last two x0 (the step before: sigma s1).
  const double s1 = sigmas_.at(index - 1);
  const double r0 = (lambda_of(s0) - lambda_of(s1)) / h;
  const float* m1 = x0_.front().f32();
  const double k = sigt / sig0;
  const double c1 = heun_ ? at * (em1 / h + 1.0) : -0.5 * at * em1;
  for (int64_t i = 0; i < out.numel(); ++i) {
    const double d1 = (double(m0[i]) - double(m1[i])) / r0;
    out.f32()[i] = float(k * sample.f32()[i] - at * em1 * m0[i] + c1 * d1);
  }
  return out;
}

}  // namespace arch

#include "engine/runtime/unipc_scheduler.h"

#include <algorithm>
#include <cmath>

namespace arch {

namespace {

// x solving a x = b for a small square a (Gaussian elimination, partial pivoting).
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const size_t n = b.size();
  for (size_t c = 0; c < n; ++c) {
    size_t p = c;
    for (size_t r = c + 1; r < n; ++r)
      if (std::abs(a[r][c]) > std::abs(a[p][c])) p = r;
    std::swap(a[c], a[p]);
    std::swap(b[c], b[p]);
    for (size_t r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (size_t k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      b[r] -= f * b[c];
    }
  }
  std::vector<double> x(n);
  for (size_t i = n; i-- > 0;) {
    double s = b[i];
    for (size_t k = i + 1; k < n; ++k) s -= a[i][k] * x[k];
    x[i] = s / a[i][i];
  }
  return x;
}

}  // namespace

Result<UniPcScheduler> UniPcScheduler::from_config(const nlohmann::json& c, const std::string& where) {
  UniPcScheduler s;
  auto refuse = [&](const std::string& what) { return error(where + ": UniPCMultistepScheduler with " + what + " is not supported"); };
  if (!c.value("use_flow_sigmas", false))
    return refuse("a DDPM noise schedule (no use_flow_sigmas; archrun runs it over flow-matching sigmas, as Wan's pipelines do)");
  if (c.value("prediction_type", std::string("epsilon")) != "flow_prediction")
    return refuse("prediction_type '" + c.value("prediction_type", std::string("epsilon")) + "' over flow sigmas (flow_prediction)");
  if (!c.value("predict_x0", true)) return refuse("predict_x0 false");
  if (c.value("thresholding", false)) return refuse("thresholding");
  for (const char* f : {"use_karras_sigmas", "use_exponential_sigmas", "use_beta_sigmas", "use_dynamic_shifting"})
    if (c.value(f, false)) return refuse(std::string(f));
  if (c.contains("solver_p") && !c["solver_p"].is_null()) return refuse("solver_p");
  s.order_ = c.value("solver_order", 2);
  if (s.order_ < 1 || s.order_ > 3) return refuse("solver_order " + std::to_string(s.order_) + " (1 to 3)");
  const std::string type = c.value("solver_type", std::string("bh2"));
  if (type != "bh1" && type != "bh2" && type != "midpoint" && type != "heun" && type != "logrho")
    return refuse("solver_type '" + type + "'");
  s.bh2_ = type != "bh1";  // diffusers runs midpoint, heun and logrho as bh2
  s.lower_order_final_ = c.value("lower_order_final", true);
  const std::string last = c.value("final_sigmas_type", std::string("zero"));
  if (last != "zero" && last != "sigma_min") return refuse("final_sigmas_type '" + last + "'");
  s.final_zero_ = last == "zero";
  s.train_steps_ = c.value("num_train_timesteps", 1000);
  if (s.train_steps_ < 2) return error(where + ": num_train_timesteps must be at least 2");
  s.shift_ = c.value("flow_shift", 1.0);
  if (!(s.shift_ > 0) || !std::isfinite(s.shift_)) return error(where + ": flow_shift must be a positive number");
  if (c.contains("disable_corrector") && !c["disable_corrector"].is_null()) {
    const auto& list = c["disable_corrector"];
    if (!list.is_array()) return error(where + ": disable_corrector must be a list of step indices");
    for (const auto& k : list) {
      if (!k.is_number_integer()) return error(where + ": disable_corrector holds " + k.dump() + ", not a step index");
      s.disable_corrector_.push_back(k.get<int>());
    }
  }
  return s;
}

Result<std::vector<float>> UniPcScheduler::set_timesteps(int steps, int64_t) {
  if (steps < 1) return error("UniPC: steps must be at least 1");
  // 1 - linspace(1, 1 / T, steps + 1), shifted, reversed, the last (0) dropped.
  std::vector<double> s;
  for (int i = steps; i >= 1; --i) {
    const double alpha = 1.0 + (1.0 / train_steps_ - 1.0) * double(i) / double(steps);
    const double sigma = 1.0 - alpha;
    s.push_back(shift_ * sigma / (1.0 + (shift_ - 1.0) * sigma));
  }
  sigmas_.clear();
  std::vector<float> timesteps;
  for (double v : s) {
    sigmas_.push_back(float(v));
    timesteps.push_back(float(int64_t(v * double(train_steps_))));  // torch's int64 cast
  }
  sigmas_.push_back(final_zero_ ? 0.0f : sigmas_.back());
  x0_.clear();
  last_sample_ = Tensor{};
  this_order_ = 1;
  lower_order_nums_ = 0;
  return timesteps;
}

Tensor UniPcScheduler::update(const Tensor& x, size_t s0, size_t t, int order, bool corrector, const Tensor* model_t) const {
  auto lambda = [&](size_t i) { return std::log(1.0 - double(sigmas_[i])) - std::log(double(sigmas_[i])); };
  const double sigma_t = sigmas_[t], sigma_s0 = sigmas_[s0], alpha_t = 1.0 - sigma_t;
  const double h = lambda(t) - lambda(s0);
  const Tensor& m0 = x0_.back();
  std::vector<double> rks;
  std::vector<const Tensor*> ms;
  for (int i = 1; i < order; ++i) {
    rks.push_back((lambda(s0 - size_t(i)) - lambda(s0)) / h);
    ms.push_back(&x0_[x0_.size() - 1 - size_t(i)]);
  }
  rks.push_back(1.0);
  const double hh = -h, h_phi_1 = std::expm1(hh), B_h = bh2_ ? std::expm1(hh) : hh;
  double h_phi_k = h_phi_1 / hh - 1.0, factorial = 1.0;
  std::vector<std::vector<double>> R;
  std::vector<double> b;
  for (int i = 1; i <= order; ++i) {
    std::vector<double> row;
    for (double rk : rks) row.push_back(std::pow(rk, i - 1));
    R.push_back(row);
    b.push_back(h_phi_k * factorial / B_h);
    factorial *= i + 1;
    h_phi_k = h_phi_k / hh - 1.0 / factorial;
  }
  std::vector<double> rhos;
  if (corrector) {
    rhos = order == 1 ? std::vector<double>{0.5} : solve(R, b);
  } else if (order == 2) {
    rhos = {0.5};
  } else if (order > 2) {
    std::vector<std::vector<double>> r(R.begin(), R.end() - 1);
    for (auto& row : r) row.pop_back();
    rhos = solve(r, std::vector<double>(b.begin(), b.end() - 1));
  }
  // x_t = sigma_t / sigma_s0 x - alpha_t h_phi_1 m0 - alpha_t B(h) (sum_k rho_k D1_k [+ rho_last (model_t - m0)]),
  // D1_k = (m_k - m0) / r_k.
  Tensor out = Tensor::zeros(DType::F32, x.shape);
  const double a = sigma_s0 > 0 ? sigma_t / sigma_s0 : 0.0, c = alpha_t * h_phi_1, d = alpha_t * B_h;
  for (int64_t e = 0; e < x.numel(); ++e) {
    const double m = m0.f32()[e];
    double res = 0;
    for (size_t k = 0; k + 1 < rks.size(); ++k) res += rhos[k] * (double(ms[k]->f32()[e]) - m) / rks[k];
    if (corrector) res += rhos.back() * (double(model_t->f32()[e]) - m);
    out.f32()[e] = float(a * double(x.f32()[e]) - c * m - d * res);
  }
  return out;
}

Tensor UniPcScheduler::step(const Tensor& v, size_t index, const Tensor& sample) {
  // The data prediction at this step: x - sigma v.
  Tensor x0 = blend(1.0f, sample, -sigmas_.at(index), v);
  Tensor x = sample;
  const bool corrector = index > 0 && last_sample_.data &&
                         std::find(disable_corrector_.begin(), disable_corrector_.end(), int(index) - 1) == disable_corrector_.end();
  if (corrector) x = update(last_sample_, index - 1, index, this_order_, true, &x0);
  x0_.push_back(x0);
  if (int(x0_.size()) > order_) x0_.erase(x0_.begin());
  const int steps = int(sigmas_.size()) - 1;
  int order = lower_order_final_ ? std::min(order_, steps - int(index)) : order_;
  this_order_ = std::min(order, lower_order_nums_ + 1);
  last_sample_ = x;
  Tensor next = update(x, index, index + 1, this_order_, false, nullptr);
  lower_order_nums_ = std::min(lower_order_nums_ + 1, order_);
  return next;
}

Tensor UniPcScheduler::add_noise(const Tensor& x0, const Tensor& noise, size_t index) const {
  const float s = sigmas_.at(index);
  return blend(1.0f - s, x0, s, noise);
}

}  // namespace arch

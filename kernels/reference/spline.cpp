// rational_quadratic_spline(x, widths [x..., B], heights [x..., B],
// derivatives [x..., B - 1]) attrs tail_bound, inverse, min_bin_width,
// min_bin_height, min_derivative -> like x: the monotonic rational-
// quadratic spline of neural spline flows (Durkan et al. 2019) on
// [-tail_bound, tail_bound], the identity outside (linear tails), one spline
// per element of x from its own unnormalised bin widths, heights and
// interior knot derivatives, as transformers' VITS computes it
// (_unconstrained_rational_quadratic_spline): widths and heights a softmax
// each, floored at min_bin_width / min_bin_height, cumulated onto the
// interval; derivatives min_derivative + softplus, the two boundary ones 1.
// `inverse`: solve the bin's quadratic for x (the duration predictor run in
// reverse). Arithmetic in double.
#include <cmath>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

struct SplineAttrs {
  double tail, min_width, min_height, min_derivative;
  bool inverse;
};

SplineAttrs spline_attrs(const Attrs& a) {
  return {attr_float(a, "tail_bound", 1.0), attr_float(a, "min_bin_width", 1e-3),
          attr_float(a, "min_bin_height", 1e-3), attr_float(a, "min_derivative", 1e-3),
          attr_bool(a, "inverse", false)};
}

template <typename D>
std::string shape_text(const D& s) {
  if constexpr (std::is_same_v<D, Shape>) return shape_str(s);
  else return dims_str(s);
}

// The bins B, or what is wrong: params must be x's shape and one more dim
// (B for widths and heights, B - 1 for derivatives).
template <typename D>
Result<int64_t> spline_bins(const D& x, const D& w, const D& h, const D& d) {
  auto extends = [&](const D& p) {
    if (p.size() != x.size() + 1) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!(p[i] == x[i])) return false;
    return true;
  };
  if (!extends(w) || !extends(h) || !extends(d) || !(w.back() == h.back()))
    return error("widths " + shape_text(w) + " and heights " + shape_text(h) + " must be x " + shape_text(x) +
                 " and B bins, derivatives " + shape_text(d) + " x and B - 1");
  int64_t bins = 0, inner = 0;
  if constexpr (std::is_same_v<D, Shape>) {
    if (!w.back().concrete() || !d.back().concrete()) return error("the bins must be a concrete dim");
    bins = w.back().n, inner = d.back().n;
  } else {
    bins = w.back(), inner = d.back();
  }
  if (bins < 1 || inner != bins - 1)
    return error("derivatives " + shape_text(d) + " must have B - 1 = " + std::to_string(bins - 1) + " items per element");
  return bins;
}

Result<std::vector<TypedShape>> spline_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  auto bins = spline_bins(in[0].shape, in[1].shape, in[2].shape, in[3].shape);
  if (!bins.ok()) return error("rational_quadratic_spline: " + bins.error().message);
  const SplineAttrs a = spline_attrs(attrs);
  if (!(a.tail > 0)) return error("rational_quadratic_spline: tail_bound must be > 0");
  if (a.min_width * double(*bins) >= 1 || a.min_height * double(*bins) >= 1)
    return error("rational_quadratic_spline: min_bin_width and min_bin_height times the bins must stay below 1");
  return one_output(in[0].shape);
}

// Knot positions (B + 1, from -tail to tail) of a softmax-normalised row
// of B unnormalised sizes, each bin at least `floor` of the interval.
void knots(const float* raw, int64_t bins, double floor, double tail, std::vector<double>& out) {
  double top = raw[0], sum = 0;
  for (int64_t k = 1; k < bins; ++k) top = std::max(top, double(raw[k]));
  std::vector<double> p(static_cast<size_t>(bins));
  for (int64_t k = 0; k < bins; ++k) sum += (p[size_t(k)] = std::exp(double(raw[k]) - top));
  out.assign(size_t(bins) + 1, 0);
  double cum = 0;
  out[0] = -tail;
  for (int64_t k = 0; k < bins; ++k) {
    cum += floor + (1 - floor * double(bins)) * p[size_t(k)] / sum;
    out[size_t(k) + 1] = 2 * tail * cum - tail;
  }
  out[size_t(bins)] = tail;
}

double softplus(double v) { return v > 30 ? v : std::log1p(std::exp(v)); }

Status spline_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 4; ++i) ARCH_TRY_STATUS(expect_f32(ctx, "rational_quadratic_spline", i));
  const Tensor& X = ctx.inputs[0];
  auto bins = spline_bins(X.shape, ctx.inputs[1].shape, ctx.inputs[2].shape, ctx.inputs[3].shape);
  if (!bins.ok()) return kernel_error(ctx, "rational_quadratic_spline", bins.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, "rational_quadratic_spline", 0, X.shape));
  const SplineAttrs a = spline_attrs(ctx.attrs);
  const int64_t B = *bins;
  const float* x = X.f32();
  float* out = ctx.outputs[0].f32();
  std::vector<double> cw, ch, deriv(size_t(B) + 1);
  for (int64_t e = 0; e < X.numel(); ++e) {
    const double v = x[e];
    if (!(v >= -a.tail && v <= a.tail)) {  // the linear tails (and NaN) pass through
      out[e] = x[e];
      continue;
    }
    knots(ctx.inputs[1].f32() + e * B, B, a.min_width, a.tail, cw);
    knots(ctx.inputs[2].f32() + e * B, B, a.min_height, a.tail, ch);
    // The boundary derivatives are 1: transformers pads with
    // log(exp(1 - min_derivative) - 1), whose min_derivative + softplus is 1.
    deriv[0] = deriv[size_t(B)] = 1;
    for (int64_t k = 1; k < B; ++k) deriv[size_t(k)] = a.min_derivative + softplus(ctx.inputs[3].f32()[e * (B - 1) + k - 1]);
    // The bin: the last knot at or below v (the top knot nudged up by 1e-6,
    // as transformers does, so v = tail falls in the last bin).
    const std::vector<double>& at = a.inverse ? ch : cw;
    int64_t k = 0;
    while (k + 1 < B && v >= at[size_t(k) + 1]) ++k;
    const double x0 = cw[size_t(k)], w = cw[size_t(k) + 1] - x0, y0 = ch[size_t(k)], h = ch[size_t(k) + 1] - y0;
    const double s = h / w, d0 = deriv[size_t(k)], d1 = deriv[size_t(k) + 1];
    const double bend = d0 + d1 - 2 * s;
    double r;
    if (!a.inverse) {
      const double theta = (v - x0) / w, tt = theta * (1 - theta);
      r = y0 + h * (s * theta * theta + d0 * tt) / (s + bend * tt);
    } else {
      // y - y0 = h (s θ² + d0 θ(1-θ)) / (s + bend θ(1-θ)), a quadratic in θ;
      // its root in [0, 1], in the cancellation-free form.
      const double dy = v - y0;
      const double qa = h * (s - d0) + dy * bend, qb = h * d0 - dy * bend, qc = -s * dy;
      const double disc = qb * qb - 4 * qa * qc;
      if (disc < 0) return kernel_error(ctx, "rational_quadratic_spline", "no inverse: the spline is not monotonic here");
      r = (2 * qc) / (-qb - std::sqrt(disc)) * w + x0;
    }
    out[e] = float(r);
  }
  return {};
}

}  // namespace

void define_spline(OpTable& t) {
  t.define(checked(OpDef{
               .name = "rational_quadratic_spline",
               .inputs = {"x", "widths", "heights", "derivatives"},
               .attrs = {{"tail_bound", AttrSpec::Float, 1.0},
                         {"inverse", AttrSpec::Bool, false},
                         {"min_bin_width", AttrSpec::Float, 1e-3},
                         {"min_bin_height", AttrSpec::Float, 1e-3},
                         {"min_derivative", AttrSpec::Float, 1e-3}},
               .shape = spline_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "rational_quadratic_spline(x, widths [x, B], heights [x, B], derivatives [x, B-1]) -> like x: "
                      "a monotonic spline on [-tail_bound, tail_bound] (its inverse with inverse: true)",
           }),
           spline_kernel);
}

}  // namespace arch

// rational_quadratic_spline: the inverse undoes the forward map, knots of
// equal widths and heights stay put, outside the tail bound is the
// identity, and the map rises.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

constexpr int64_t B = 10;

struct Params { Tensor widths, heights, derivatives; };

Params random_params(int64_t n, uint64_t seed) {
  auto scale = [](std::vector<float> v, float s) { for (float& x : v) x *= s; return v; };
  return {f32({n, B}, scale(random_values(size_t(n * B), seed), 1.5f)),
          f32({n, B}, scale(random_values(size_t(n * B), seed + 1), 1.5f)),
          f32({n, B - 1}, scale(random_values(size_t(n * (B - 1)), seed + 2), 1.5f))};
}

Tensor spline(const Tensor& x, const Params& p, bool inverse) {
  return run1("rational_quadratic_spline", {x, p.widths, p.heights, p.derivatives},
              {{"tail_bound", 5.0}, {"inverse", inverse}});
}

TEST(RationalQuadraticSpline, InverseUndoesForward) {
  const int64_t n = 200;
  auto xv = random_values(size_t(n), 9);
  for (float& x : xv) x *= 6;  // some beyond the tail bound 5
  Tensor x = f32({n}, xv);
  Params p = random_params(n, 4);
  Tensor y = spline(x, p, false);
  // y is rounded to f32 in between: x comes back within that rounding
  // over the steepest slope these parameters make.
  expect_close(values(spline(y, p, true)), to_double(xv), 0, 5e-5);
  for (int64_t i = 0; i < n; ++i)
    if (std::fabs(xv[size_t(i)]) > 5) {
      EXPECT_EQ(y.f32()[i], xv[size_t(i)]) << "outside the tails: the identity";
    }
}

TEST(RationalQuadraticSpline, EqualBinsKeepTheKnots) {
  // All-zero widths and heights: equal bins on [-5, 5], so knot k maps to
  // itself whatever the derivatives.
  const int64_t n = B + 1;
  std::vector<float> xv;
  for (int64_t k = 0; k <= B; ++k) xv.push_back(float(-5 + 10.0 * double(k) / double(B)));
  Params p{f32({n, B}, std::vector<float>(size_t(n * B), 0)), f32({n, B}, std::vector<float>(size_t(n * B), 0)),
           f32({n, B - 1}, random_values(size_t(n * (B - 1)), 5))};
  expect_close(values(spline(f32({n}, xv), p, false)), to_double(xv), 0, 1e-5);
}

TEST(RationalQuadraticSpline, Rises) {
  const int64_t n = 101;
  std::vector<float> xv;
  for (int64_t i = 0; i < n; ++i) xv.push_back(float(-4.99 + 9.98 * double(i) / double(n - 1)));
  // One set of parameters for every element: repeat row 0.
  Params one = random_params(1, 11);
  auto rows = [&](const Tensor& t, int64_t w) {
    std::vector<float> v;
    for (int64_t i = 0; i < n; ++i) v.insert(v.end(), t.f32(), t.f32() + w);
    return f32({n, w}, v);
  };
  Params p{rows(one.widths, B), rows(one.heights, B), rows(one.derivatives, B - 1)};
  auto y = values(spline(f32({n}, xv), p, false));
  for (int64_t i = 1; i < n; ++i) EXPECT_GT(y[size_t(i)], y[size_t(i - 1)]) << "at " << i;
}

TEST(RationalQuadraticSpline, ShapeRuleWantsBinsAndOneFewerDerivatives) {
  auto bad = infer("rational_quadratic_spline", {{DType::F32, {Dim::of(4)}},
                                                 {DType::F32, {Dim::of(4), Dim::of(10)}},
                                                 {DType::F32, {Dim::of(4), Dim::of(10)}},
                                                 {DType::F32, {Dim::of(4), Dim::of(10)}}});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace arch::test

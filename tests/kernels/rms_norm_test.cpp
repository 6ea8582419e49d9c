#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// y = x / sqrt(mean(x^2) + eps) * w, in double
std::vector<double> naive_rms(const std::vector<float>& x, const std::vector<float>* w, int64_t D, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / D; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += double(x[r * D + i]) * x[r * D + i];
    double inv = 1.0 / std::sqrt(ss / D + eps);
    for (int64_t i = 0; i < D; ++i) y[r * D + i] = x[r * D + i] * inv * (w ? (*w)[i] : 1.0);
  }
  return y;
}

TEST(RmsNorm, HandValues) {
  // x = [3, 4]: mean(x^2) = 12.5; eps 0 -> y = x / sqrt(12.5)
  Tensor out = run1("rms_norm", {f32({1, 2}, {3, 4}), absent()}, {{"eps", 0.0}});
  EXPECT_NEAR(out.f32()[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(out.f32()[1], 4 / std::sqrt(12.5), 1e-6);
}

TEST(RmsNorm, WithoutWeight) {
  std::vector<float> x = random_values(3 * 16, 7);
  Tensor out = run1("rms_norm", {f32({3, 16}, x), absent()}, {{"eps", 1e-6}});
  expect_close(values(out), naive_rms(x, nullptr, 16, 1e-6), 1e-5);
}

TEST(RmsNorm, WithWeight) {
  std::vector<float> x = random_values(2 * 2 * 8, 8), w = random_values(8, 9);
  Tensor out = run1("rms_norm", {f32({2, 2, 8}, x), f32({8}, w)}, {{"eps", 1e-5}});
  EXPECT_EQ(out.shape, (Dims{2, 2, 8}));
  expect_close(values(out), naive_rms(x, &w, 8, 1e-5), 1e-5);
}

TEST(RmsNorm, ShapeErrors) {
  auto bad = infer("rms_norm", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {Dim::of(32)}}},
                   {{"eps", 1e-6}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "rms_norm: weight [32] does not match the last dim of x [seq, 64]");
  // The caller fills a required attribute with its null default: still missing.
  auto no_eps = infer("rms_norm", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {}}}, Attrs::object(),
                      {true, false});
  ASSERT_FALSE(no_eps.ok());
  EXPECT_EQ(no_eps.error().message, "rms_norm: attribute 'eps' is required");
  auto no_weight = infer("rms_norm", {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {}}},
                         {{"eps", 1e-6}}, {true, false});
  ASSERT_TRUE(no_weight.ok()) << no_weight.error().message;
  EXPECT_EQ(shape_str(no_weight->at(0).shape), "[seq, 64]");
}

}  // namespace
}  // namespace arch::test

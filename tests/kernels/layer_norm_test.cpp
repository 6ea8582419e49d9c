#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// y = (x - mean) / sqrt(var + eps) * w + b, biased variance, in double
std::vector<double> naive_ln(const std::vector<float>& x, const std::vector<float>* w,
                             const std::vector<float>* b, int64_t D, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / D; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < D; ++i) mean += x[r * D + i];
    mean /= D;
    for (int64_t i = 0; i < D; ++i) var += (x[r * D + i] - mean) * (x[r * D + i] - mean);
    var /= D;
    for (int64_t i = 0; i < D; ++i)
      y[r * D + i] = (x[r * D + i] - mean) / std::sqrt(var + eps) * (w ? (*w)[i] : 1.0) + (b ? (*b)[i] : 0.0);
  }
  return y;
}

TEST(LayerNorm, HandValues) {
  // x = [1, 3]: mean 2, var 1; eps 0 -> [-1, 1] * w + b
  Tensor out = run1("layer_norm", {f32({1, 2}, {1, 3}), f32({2}, {2, 3}), f32({2}, {10, 20})}, {{"eps", 0.0}});
  EXPECT_NEAR(out.f32()[0], 8.0, 1e-6);
  EXPECT_NEAR(out.f32()[1], 23.0, 1e-6);
}

TEST(LayerNorm, WeightAndBiasMatchDouble) {
  std::vector<float> x = random_values(4 * 24, 11), w = random_values(24, 12), b = random_values(24, 13);
  for (float& v : x) v = v * 3 + 5;  // a mean far from zero
  Tensor out = run1("layer_norm", {f32({4, 24}, x), f32({24}, w), f32({24}, b)}, {{"eps", 1e-5}});
  expect_close(values(out), naive_ln(x, &w, &b, 24, 1e-5), 1e-5);
}

TEST(LayerNorm, OptionalWeightAndBias) {
  std::vector<float> x = random_values(2 * 8, 14), b = random_values(8, 15);
  Tensor plain = run1("layer_norm", {f32({2, 8}, x), absent(), absent()});  // eps defaults to 1e-5
  expect_close(values(plain), naive_ln(x, nullptr, nullptr, 8, 1e-5), 1e-5);
  Tensor bias_only = run1("layer_norm", {f32({2, 8}, x), absent(), f32({8}, b)});
  expect_close(values(bias_only), naive_ln(x, nullptr, &b, 8, 1e-5), 1e-5);
}

TEST(LayerNorm, ShapeErrors) {
  auto bad = infer("layer_norm",
                   {{DType::F32, {Dim::seq(), Dim::of(64)}}, {DType::F32, {Dim::of(64)}}, {DType::F32, {Dim::of(63)}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "layer_norm: bias [63] does not match the last dim of x [seq, 64]");
}

}  // namespace
}  // namespace arch::test

#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// y[c, ...] = (x[c, ...] - mean[c]) / sqrt(var[c] + eps) * w[c] + b[c], in double
std::vector<double> naive_bn(const std::vector<float>& x, int64_t C, const std::vector<float>* w,
                             const std::vector<float>* b, const std::vector<float>& mean,
                             const std::vector<float>& var, double eps) {
  std::vector<double> y(x.size());
  const size_t inner = x.size() / size_t(C);
  for (size_t c = 0; c < size_t(C); ++c)
    for (size_t i = 0; i < inner; ++i)
      y[c * inner + i] = (x[c * inner + i] - double(mean[c])) / std::sqrt(double(var[c]) + eps) * (w ? (*w)[c] : 1.0) +
                         (b ? (*b)[c] : 0.0);
  return y;
}

TEST(BatchNorm, HandValues) {
  // channel 0: mean 1, var 4 -> (x - 1) / 2 * 3 + 10; channel 1: mean -2, var 0.25 -> (x + 2) * 2 * -1 + 0
  Tensor x = f32({2, 3}, {1, 3, -1, -2, -1.5f, 0});
  Tensor out = run1("batch_norm", {x, f32({2}, {3, -1}), f32({2}, {10, 0}), f32({2}, {1, -2}), f32({2}, {4, 0.25f})},
                    {{"eps", 0.0}});
  EXPECT_EQ(out.shape, (Dims{2, 3}));
  expect_close(values(out), {10, 13, 7, -0.0, -1, -4}, 0, 1e-6);
}

TEST(BatchNorm, ImagesMatchDouble) {
  // x [C, H, W] as a conv gives it; mean far from zero, variances spread out
  const int64_t C = 5, H = 4, W = 3;
  std::vector<float> x = random_values(size_t(C * H * W), 31), w = random_values(5, 32), b = random_values(5, 33);
  std::vector<float> mean = random_values(5, 34), var = random_values(5, 35);
  for (float& v : x) v = v * 4 + 2;
  for (float& v : var) v = v * v * 3 + 0.01f;
  Tensor out = run1("batch_norm", {f32({C, H, W}, x), f32({C}, w), f32({C}, b), f32({C}, mean), f32({C}, var)});
  EXPECT_EQ(out.shape, (Dims{C, H, W}));
  expect_close(values(out), naive_bn(x, C, &w, &b, mean, var, 1e-5), 1e-5, 1e-6);  // eps defaults to 1e-5
}

TEST(BatchNorm, OptionalAffineAndOtherRanks) {
  std::vector<float> x = random_values(3 * 4, 36), mean = {0.5f, -0.25f, 0}, var = {1, 2, 0.5f};
  std::vector<float> b = {1, 2, 3};
  Tensor plain = run1("batch_norm", {f32({3, 4}, x), absent(), absent(), f32({3}, mean), f32({3}, var)},
                      {{"eps", 1e-3}});
  expect_close(values(plain), naive_bn(x, 3, nullptr, nullptr, mean, var, 1e-3), 1e-5, 1e-6);
  Tensor bias_only = run1("batch_norm", {f32({3, 4}, x), absent(), f32({3}, b), f32({3}, mean), f32({3}, var)});
  expect_close(values(bias_only), naive_bn(x, 3, nullptr, &b, mean, var, 1e-5), 1e-5, 1e-6);
  // x [C]: one value per channel
  Tensor one = run1("batch_norm", {f32({3}, {1.5f, 0.75f, 2}), absent(), absent(), f32({3}, mean), f32({3}, var)},
                    {{"eps", 0.0}});
  expect_close(values(one), {1.0, 1.0 / std::sqrt(2.0), 2.0 / std::sqrt(0.5)}, 1e-6, 1e-6);
}

TEST(BatchNorm, ShapeRule) {
  TypedShape p{DType::F32, {Dim::of(64)}};
  auto ok = infer("batch_norm", {{DType::F32, {Dim::of(64), Dim::of(56), Dim::of(56)}}, p, p, p, p});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[64, 56, 56]");
  auto bad = infer("batch_norm", {{DType::F32, {Dim::of(64), Dim::of(8)}}, p, p, p, {DType::F32, {Dim::of(8)}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "batch_norm: running_var [8] does not match the channels (dim 0) of x [64, 8]");
  auto w2 = infer("batch_norm", {{DType::F32, {Dim::of(64), Dim::of(8)}}, {DType::F32, {Dim::of(64), Dim::of(1)}}, p, p, p});
  ASSERT_FALSE(w2.ok());
  EXPECT_EQ(w2.error().message, "batch_norm: weight [64, 1] does not match the channels (dim 0) of x [64, 8]");
  auto scalar = infer("batch_norm", {{DType::F32, {}}, p, p, p, p});
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.error().message, "batch_norm: x must be [C, ...], got []");
  auto missing = infer("batch_norm", {{DType::F32, {Dim::of(64)}}, p, p, {}, p}, Attrs::object(),
                       {true, true, true, false, true});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "batch_norm: input 'running_mean' is required");
}

}  // namespace
}  // namespace arch::test

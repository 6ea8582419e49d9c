// normal_noise: reproducible per seed and stream, standard normal in bulk,
// scaled by one number or one per element, and recorded draws scaled in
// their place.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

Tensor seed_of(int32_t s) { return i32({}, {s}); }

TEST(NormalNoise, SameSeedSameDraws) {
  Tensor like = Tensor::zeros(DType::F32, {4, 5});
  auto a = values(run1("normal_noise", {like, absent(), seed_of(7)}));
  auto b = values(run1("normal_noise", {like, absent(), seed_of(7)}));
  auto c = values(run1("normal_noise", {like, absent(), seed_of(8)}));
  auto d = values(run1("normal_noise", {like, absent(), seed_of(7)}, {{"stream", 1}}));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, d);
}

TEST(NormalNoise, StandardNormalInBulk) {
  Tensor like = Tensor::zeros(DType::F32, {100001});  // odd: the last pair half used
  auto v = values(run1("normal_noise", {like}));
  double sum = 0, sq = 0;
  for (float x : v) sum += x, sq += double(x) * x;
  const double mean = sum / double(v.size()), var = sq / double(v.size()) - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);  // 6 standard errors
  EXPECT_NEAR(var, 1.0, 0.03);
}

TEST(NormalNoise, ScaledByANumberOrPerElement) {
  Tensor like = Tensor::zeros(DType::F32, {3});
  auto base = values(run1("normal_noise", {like, absent(), seed_of(3)}));
  auto twice = values(run1("normal_noise", {like, f32({}, {2}), seed_of(3)}));
  auto each = values(run1("normal_noise", {like, f32({3}, {0, 1, -1}), seed_of(3)}));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(twice[i], 2 * base[i]);
  EXPECT_EQ(each, (std::vector<float>{0, base[1], -base[2]}));
  Runner r;
  EXPECT_NE(run_error(r, "normal_noise", {like, f32({2}, {1, 1})}).find("scale"), std::string::npos);
}

TEST(NormalNoise, RecordedDrawsAreScaledInstead) {
  Tensor like = Tensor::zeros(DType::F32, {2, 2});
  Tensor rec = f32({2, 2}, {0.5f, -1, 2, 0});
  EXPECT_EQ(values(run1("normal_noise", {like, f32({}, {2}), seed_of(1), rec})), (std::vector<float>{1, -2, 4, 0}));
  EXPECT_EQ(values(run1("normal_noise", {like, absent(), absent(), rec})), values(rec));
  Runner r;
  std::string e = run_error(r, "normal_noise", {like, absent(), absent(), f32({2, 3}, {0, 0, 0, 0, 0, 0})});
  EXPECT_NE(e.find("recorded noise"), std::string::npos) << e;
}

}  // namespace
}  // namespace arch::test

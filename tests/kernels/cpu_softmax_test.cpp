// The cpu backend's softmax (softmax_hwy.cpp) against the reference kernel,
// within the op's tolerance; its log-sum-exp against a sum in double.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

TEST(CpuSoftmax, MatchesReference) {
  const Dims shapes[] = {{1},     {1, 1},   {3, 7},     {2, 16},    {5, 17},   {4, 33},
                         {2, 3, 65}, {14, 64, 64}, {1, 151936}, {300, 129}, {700, 301}};
  uint64_t seed = 1;
  for (const Dims& s : shapes)
    for (float scale : {1.0f, 30.0f}) {
      double mx = expect_cpu_matches_reference("softmax", {f32(s, scaled_values(size_t(numel(s)), seed++, scale))},
                                               Attrs::object(), "softmax " + dims_str(s));
      EXPECT_GT(mx, 0.0);
    }
}

TEST(CpuSoftmax, MaskedEntriesAndLargeValues) {
  // -inf entries (a mask) give exactly 0; a shift by 1000 changes nothing.
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> x = {1000, 1001, ninf, 999, ninf, ninf, ninf, 1002, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 998};
  expect_cpu_matches_reference("softmax", {f32({int64_t(x.size())}, x)}, Attrs::object(), "masked");
  auto out = run_on("cpu", "softmax", {f32({int64_t(x.size())}, x)});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].f32()[2], 0.0f);
  double sum = 0;
  for (float v : values((*out)[0])) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(CpuSoftmax, ErrorsAreTheReferences) {
  std::vector<Tensor> out{Tensor::zeros(DType::F32, {2})};
  std::string ref = kernel_message("reference", "softmax", {i32({2}, {1, 2})}, out);
  EXPECT_FALSE(ref.empty());
  EXPECT_EQ(kernel_message("cpu", "softmax", {i32({2}, {1, 2})}, out), ref);
}

TEST(CpuLogSumExp, IsTheLogOfTheSumInDouble) {
  // Lengths with and without a vector tail, a vocabulary's worth (several
  // blocks of 1024), values far from 0 (taken from their max).
  for (size_t n : {size_t(1), size_t(15), size_t(17), size_t(1000), size_t(151936)}) {
    std::vector<float> x(n);
    for (size_t i = 0; i < n; ++i) x[i] = 300.0f + float((i * 7919) % 1009) * 0.01f;
    double high = x[0], sum = 0;
    for (float v : x) high = std::max(high, double(v));
    for (float v : x) sum += std::exp(double(v) - high);
    EXPECT_NEAR(log_sum_exp(x), high + std::log(sum), 1e-5) << n;
  }
  // -inf entries weigh nothing; all -inf, or none, is -inf.
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_NEAR(log_sum_exp(std::vector<float>{0.0f, -inf, 0.0f}), std::log(2.0), 1e-6);
  EXPECT_EQ(log_sum_exp(std::vector<float>{-inf, -inf}), -inf);
  EXPECT_EQ(log_sum_exp(std::vector<float>{}), -inf);
}

}  // namespace
}  // namespace arch::test

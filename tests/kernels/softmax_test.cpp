#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

std::vector<double> naive_softmax(const std::vector<float>& x, int64_t D) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / D; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < D; ++i) sum += std::exp(double(x[r * D + i]));
    for (int64_t i = 0; i < D; ++i) y[r * D + i] = std::exp(double(x[r * D + i])) / sum;
  }
  return y;
}

TEST(Softmax, HandValues) {
  // softmax([1, 2, 3]) = e^i / (e + e^2 + e^3)
  Tensor out = run1("softmax", {f32({1, 3}, {1, 2, 3})});
  EXPECT_NEAR(out.f32()[0], 0.09003057, 1e-7);
  EXPECT_NEAR(out.f32()[1], 0.24472847, 1e-7);
  EXPECT_NEAR(out.f32()[2], 0.66524096, 1e-7);
}

TEST(Softmax, RowsMatchDouble) {
  std::vector<float> x = random_values(5 * 33, 21);
  for (float& v : x) v *= 8;
  Tensor out = run1("softmax", {f32({5, 33}, x)});
  expect_close(values(out), naive_softmax(x, 33), 1e-5);
}

TEST(Softmax, LargeValuesAreStable) {
  // Max-subtracted: [1000, 1001] is softmax([0, 1]).
  Tensor out = run1("softmax", {f32({2}, {1000, 1001})});
  EXPECT_NEAR(out.f32()[0], 0.26894142, 1e-7);
  EXPECT_NEAR(out.f32()[1], 0.73105858, 1e-7);
}

}  // namespace
}  // namespace arch::test

#include <cmath>

#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(RopeAxesTables, EachAxisItsSectionAndPairs) {
  // axes_dims [2, 4]: axis 0 one frequency (1), axis 1 two (1, theta^-1/2 = 0.01).
  auto out = run_all("rope_axes_tables", {f32({1, 2}, {3.0f, 5.0f})}, {{"axes_dims", {2, 4}}});
  ASSERT_EQ(out.size(), 2u);
  const auto c = values(out[0]), s = values(out[1]);
  ASSERT_EQ(c.size(), 6u);
  EXPECT_NEAR(c[0], std::cos(3.0), 1e-7);
  EXPECT_EQ(c[0], c[1]);  // repeated for its pair
  EXPECT_NEAR(c[2], std::cos(5.0), 1e-7);
  EXPECT_NEAR(s[4], std::sin(5.0 * 0.01), 1e-7);
  EXPECT_EQ(s[4], s[5]);
}

TEST(Rotary, RotatesInterleavedPairs) {
  // One token, one head of 2: (1, 2) by a quarter turn is (-2, 1).
  Tensor out = run1("rotary", {f32({1, 1, 2}, {1, 2}), f32({1, 2}, {0, 0}), f32({1, 2}, {1, 1})});
  EXPECT_EQ(values(out), (std::vector<float>{-2, 1}));
  Runner r;
  EXPECT_FALSE(r.run("rotary", {f32({1, 1, 3}, {1, 2, 3}), f32({1, 3}, {0, 0, 0}), f32({1, 3}, {1, 1, 1})}).ok());
}

}  // namespace
}  // namespace arch::test

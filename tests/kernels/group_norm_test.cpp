#include <cmath>

#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

TEST(GroupNorm, EachGroupOverItsChannelsAndPositions) {
  // 4 channels of 2 positions in 2 groups: group 0 holds 0 1 2 3, group 1 10 10 10 14.
  Tensor x = f32({4, 2}, {0, 1, 2, 3, 10, 10, 10, 14});
  Tensor out = run1("group_norm", {x, f32({4}, {1, 1, 2, 1}), f32({4}, {0, 0, 0, 5})}, {{"groups", 2}, {"eps", 0.0}});
  const auto v = values(out);
  const double s0 = std::sqrt(1.25);  // mean 1.5, var 1.25
  EXPECT_NEAR(v[0], -1.5 / s0, 1e-6);
  EXPECT_NEAR(v[3], 1.5 / s0, 1e-6);
  // group 1: mean 11, var 3; channel 2 doubled, channel 3 shifted by 5
  EXPECT_NEAR(v[4], 2 * (-1 / std::sqrt(3.0)), 1e-6);
  EXPECT_NEAR(v[7], 3 / std::sqrt(3.0) + 5, 1e-6);
}

TEST(GroupNorm, RefusesGroupsThatDoNotDivideTheChannels) {
  Runner r;
  EXPECT_FALSE(r.run("group_norm", {f32({3, 1}, {1, 2, 3})}, {{"groups", 2}}).ok());
}

TEST(UpsampleNearest, RepeatsEachPixel) {
  Tensor out = run1("upsample_nearest", {f32({1, 1, 2}, {1, 2})});
  EXPECT_EQ(out.shape, (Dims{1, 2, 4}));
  EXPECT_EQ(values(out), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2}));
}

TEST(CpuGroupNorm, MatchesTheReference) {
  Tensor x = f32({8, 5, 3}, scaled_values(120, 11, 2.0f));
  expect_cpu_matches_reference("group_norm", {x, f32({8}, scaled_values(8, 12, 1.0f)), f32({8}, scaled_values(8, 13, 1.0f))},
                               {{"groups", 4}, {"eps", 1e-6}}, "8 channels in 4 groups");
}

}  // namespace
}  // namespace arch::test

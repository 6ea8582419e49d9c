#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Pad, EachSideItsOwnAmount) {
  // [1, 1, 2] padded right and bottom by 1 (a VAE's Downsample2D).
  Tensor out = run1("pad", {f32({1, 1, 2}, {1, 2})}, {{"pads", {0, 1, 0, 1}}});
  EXPECT_EQ(out.shape, (Dims{1, 2, 3}));
  EXPECT_EQ(values(out), (std::vector<float>{1, 2, 0, 0, 0, 0}));
  Runner r;
  EXPECT_FALSE(r.run("pad", {f32({1, 1, 2}, {1, 2})}, {{"pads", {0, -1, 0, 1}}}).ok());
}

TEST(Clamp, HoldsToTheRange) {
  Tensor out = run1("clamp", {f32({4}, {-50, -1, 3, 25})}, {{"min", -30.0}, {"max", 20.0}});
  EXPECT_EQ(values(out), (std::vector<float>{-30, -1, 3, 20}));
  Runner r;
  EXPECT_FALSE(r.run("clamp", {f32({1}, {1})}, {{"min", 2.0}, {"max", 1.0}}).ok());
}

}  // namespace
}  // namespace arch::test

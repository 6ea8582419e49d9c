#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Round, ToBf16NearestEven) {
  // 1 + 2^-8 is halfway between bf16's 1 and 1 + 2^-7: to even (1); 1 + 3*2^-8
  // is halfway between 1 + 2^-7 and 1 + 2^-6: to even (1 + 2^-6).
  Tensor out = run1("round", {f32({4}, {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 1.0f + 1.0f / 128})},
                    {{"dtype", "bf16"}});
  EXPECT_EQ(values(out), (std::vector<float>{1.0f, 1.0f + 1.0f / 64, -2.5f, 1.0f + 1.0f / 128}));
}

TEST(Round, ToF16) {
  Tensor out = run1("round", {f32({2}, {1.0f + 1.0f / 4096, 65504.0f})}, {{"dtype", "f16"}});
  EXPECT_EQ(values(out), (std::vector<float>{1.0f, 65504.0f}));
}

TEST(Round, RefusesAnUnknownType) {
  Runner r;
  EXPECT_FALSE(r.run("round", {f32({1}, {1.0f})}, {{"dtype", "int4"}}).ok());
}

}  // namespace
}  // namespace arch::test

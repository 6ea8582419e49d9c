// flip and cumsum along either axis of a [2, 3] by hand; flip keeps ints.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Flip, ReversesOneAxis) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values(run1("flip", {x}, {{"axis", 0}})), (std::vector<float>{4, 5, 6, 1, 2, 3}));
  EXPECT_EQ(values(run1("flip", {x}, {{"axis", -1}})), (std::vector<float>{3, 2, 1, 6, 5, 4}));
  EXPECT_EQ(ints(run1("flip", {i32({3}, {7, 8, 9})}, {{"axis", 0}})), (std::vector<int32_t>{9, 8, 7}));
}

TEST(Cumsum, RunningSums) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(values(run1("cumsum", {x}, {{"axis", 1}})), (std::vector<float>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values(run1("cumsum", {x}, {{"axis", 0}})), (std::vector<float>{1, 2, 3, 5, 7, 9}));
  EXPECT_FALSE(infer("cumsum", {{DType::F32, {Dim::of(2)}}}, {{"axis", 3}}).ok());
}

}  // namespace
}  // namespace arch::test

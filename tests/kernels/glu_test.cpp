// glu: act(gate columns) * up columns, the same numbers as the act, slice
// and mul ops it stands for, and its shape rule's refusals.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

Tensor sliced(const Tensor& x, int64_t start, int64_t end) {
  return run1("slice", {x}, {{"axis", -1}, {"start", start}, {"end", end}});
}

TEST(Glu, IsActOfTheGateTimesTheUpBitForBit) {
  // One merged [rows, 2 * width] value read in place, as the planner leaves it.
  const int64_t rows = 3, width = 5;
  Tensor x = f32({rows, 2 * width}, random_values(size_t(rows * 2 * width), 4));
  for (const char* act : {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh"}) {
    Tensor got = run1("glu", {x, x}, {{"act", act}, {"gate_start", 0}, {"up_start", width}, {"width", width}});
    Tensor want = run1("mul", {run1(act, {sliced(x, 0, width)}), sliced(x, width, 2 * width)});
    EXPECT_EQ(got.shape, (Dims{rows, width}));
    EXPECT_EQ(values(got), values(want)) << act;
  }
  // Two values, columns from an offset in each.
  Tensor gate = f32({2, 4}, {0, -1, 2, 3, 4, 5, -6, 7}), up = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor got = run1("glu", {gate, up}, {{"act", "relu"}, {"gate_start", 1}, {"up_start", 1}, {"width", 2}});
  EXPECT_EQ(values(got), (std::vector<float>{0 * 2, 2 * 3, 5 * 5, 0 * 6}));
}

TEST(Glu, ShapeRule) {
  TypedShape x{DType::F32, {Dim::seq(), Dim::of(12)}};
  auto ok = infer("glu", {x, x}, {{"act", "silu"}, {"up_start", 6}, {"width", 6}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 6]");

  auto past = infer("glu", {x, x}, {{"act", "silu"}, {"up_start", 7}, {"width", 6}});
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().message, "glu: up columns [7, 13) are not within its last dim of 12");
  auto act = infer("glu", {x, x}, {{"act", "softmax"}, {"width", 6}});
  ASSERT_FALSE(act.ok());
  EXPECT_EQ(act.error().message, "glu: act \"softmax\" is not an activation");
  TypedShape other{DType::F32, {Dim::of(3), Dim::of(12)}};
  auto rows = infer("glu", {x, other}, {{"act", "silu"}, {"width", 6}});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().message, "glu: gate [seq, 12] and up [3, 12] must agree but for the last dim");
}

}  // namespace
}  // namespace arch::test

#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Concat, AlongEachAxis) {
  Tensor a = f32({2, 2}, {1, 2, 3, 4});
  Tensor b = f32({2, 3}, {5, 6, 7, 8, 9, 10});
  Tensor c1 = run1("concat", {a, b}, {{"axis", 1}});
  EXPECT_EQ(c1.shape, (Dims{2, 5}));
  EXPECT_EQ(values(c1), (std::vector<float>{1, 2, 5, 6, 7, 3, 4, 8, 9, 10}));
  EXPECT_EQ(values(run1("concat", {a, b}, {{"axis", -1}})), values(c1));
  Tensor c0 = run1("concat", {a, f32({1, 2}, {9, 9}), a}, {{"axis", 0}});
  EXPECT_EQ(c0.shape, (Dims{5, 2}));
  EXPECT_EQ(values(c0), (std::vector<float>{1, 2, 3, 4, 9, 9, 1, 2, 3, 4}));
}

TEST(Concat, MiddleAxisOfThreeDims) {
  std::vector<float> x = random_values(2 * 3 * 4, 100), y = random_values(2 * 1 * 4, 101);
  Tensor out = run1("concat", {f32({2, 3, 4}, x), f32({2, 1, 4}, y)}, {{"axis", 1}});
  EXPECT_EQ(out.shape, (Dims{2, 4, 4}));
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c)
        EXPECT_EQ(out.f32()[(a * 4 + b) * 4 + c], b < 3 ? x[(a * 3 + b) * 4 + c] : y[a * 4 + c]) << a << b << c;
}

TEST(Concat, OneInputAndInts) {
  EXPECT_EQ(values(run1("concat", {f32({3}, {1, 2, 3})}, {{"axis", 0}})), (std::vector<float>{1, 2, 3}));
  Tensor ids = run1("concat", {i32({1, 2}, {1, 2}), i32({1, 1}, {3})}, {{"axis", 1}});
  EXPECT_EQ(ids.dtype, DType::I32);
  EXPECT_EQ(ints(ids), (std::vector<int32_t>{1, 2, 3}));
}

TEST(Concat, ShapeRule) {
  auto t = [](Shape s) { return TypedShape{DType::F32, std::move(s)}; };
  // Other dims may be `seq` as long as they agree; the joined axis must be concrete.
  auto ok = infer("concat", {t({Dim::seq(), Dim::of(4)}), t({Dim::seq(), Dim::of(2)})}, {{"axis", -1}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 6]");

  auto seq = infer("concat", {t({Dim::seq(), Dim::of(4)}), t({Dim::of(2), Dim::of(4)})}, {{"axis", 0}});
  ASSERT_FALSE(seq.ok());
  EXPECT_EQ(seq.error().message,
            "concat: axis 0 of input 0 [seq, 4] is seq: a step's rows cannot be concatenated");
  // A graph's own run-time dim joins into a length worked out per call.
  auto src = infer("concat", {t({Dim::named(dim_symbol("src")), Dim::of(4)}), t({Dim::of(2), Dim::of(4)})}, {{"axis", 0}});
  ASSERT_TRUE(src.ok()) << src.error().message;
  EXPECT_EQ(shape_str(src->at(0).shape), "[_, 4]");
  auto differ = infer("concat", {t({Dim::seq(), Dim::of(4)}), t({Dim::of(2), Dim::of(4)})}, {{"axis", 1}});
  ASSERT_FALSE(differ.ok());
  EXPECT_EQ(differ.error().message,
            "concat: input 1 is F32[2, 4], input 0 is F32[seq, 4] (all must agree except on axis 1)");
  auto rank = infer("concat", {t({Dim::of(4)}), t({Dim::of(1), Dim::of(4)})}, {{"axis", 0}});
  EXPECT_FALSE(rank.ok());
  auto required = infer("concat", {t({Dim::of(4)})});
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.error().message, "concat: attribute 'axis' is required");
  auto none = infer("concat", {}, {{"axis", 0}});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "concat: needs at least one input");
}

}  // namespace
}  // namespace arch::test

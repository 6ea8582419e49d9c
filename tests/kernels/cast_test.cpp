#include "tests/kernels/kernel_test_util.h"

#include <limits>

namespace arch::test {
namespace {

TEST(Cast, IntToFloat) {
  Tensor out = run1("cast", {i32({2, 3}, {0, 1, -2, 511, -100000, 16777216})}, {{"dtype", "f32"}});
  EXPECT_EQ(out.dtype, DType::F32);
  EXPECT_EQ(out.shape, (Dims{2, 3}));
  EXPECT_EQ(values(out), (std::vector<float>{0, 1, -2, 511, -100000, 16777216}));
  // Past 2^24 a float rounds to the nearest even: 2^24 + 1 -> 2^24, 2^24 + 3 -> 2^24 + 4
  Tensor big = run1("cast", {i32({2}, {16777217, 16777219})}, {{"dtype", "f32"}});
  EXPECT_EQ(values(big), (std::vector<float>{16777216.0f, 16777220.0f}));
}

TEST(Cast, FloatToIntTruncatesTowardZero) {
  Tensor out = run1("cast", {f32({8}, {0.0f, 1.9f, -1.9f, 2.5f, -2.5f, -0.4f, 1e9f, -2147483648.0f})},
                    {{"dtype", "i32"}});
  EXPECT_EQ(out.dtype, DType::I32);
  EXPECT_EQ(ints(out), (std::vector<int32_t>{0, 1, -1, 2, -2, 0, 1000000000, std::numeric_limits<int32_t>::min()}));
  // Out of range and NaN: INT32_MIN, as torch gives on x86
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  Tensor bad = run1("cast", {f32({4}, {nan, inf, -inf, 2147483648.0f})}, {{"dtype", "i32"}});
  EXPECT_EQ(ints(bad), std::vector<int32_t>(4, std::numeric_limits<int32_t>::min()));
}

TEST(Cast, SameDtypeCopies) {
  Tensor ids = run1("cast", {i32({3}, {5, -6, 7})}, {{"dtype", "i32"}});
  EXPECT_EQ(ids.dtype, DType::I32);
  EXPECT_EQ(ints(ids), (std::vector<int32_t>{5, -6, 7}));
  Tensor xs = run1("cast", {f32({2}, {1.25f, -3.5f})}, {{"dtype", "f32"}});
  EXPECT_EQ(values(xs), (std::vector<float>{1.25f, -3.5f}));
  // A 0-d scalar (a literal in a template is a 0-d constant) casts too
  Tensor two = run1("cast", {f32({}, {2.0f})}, {{"dtype", "i32"}});
  EXPECT_EQ(two.shape, Dims{});
  EXPECT_EQ(ints(two), (std::vector<int32_t>{2}));
}

TEST(Cast, ShapeRule) {
  auto out = infer("cast", {{DType::I32, {Dim::seq()}}}, {{"dtype", "f32"}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->at(0).dtype, DType::F32);
  EXPECT_EQ(shape_str(out->at(0).shape), "[seq]");
  auto back = infer("cast", {{DType::F32, {Dim::seq(), Dim::of(2)}}}, {{"dtype", "i32"}});
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->at(0).dtype, DType::I32);

  auto msg = [](TypedShape x, Attrs a) {
    auto r = infer("cast", {x}, a);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  TypedShape x{DType::F32, {Dim::of(3)}};
  EXPECT_EQ(msg(x, {{"dtype", "int64"}}), "cast: dtype must be \"f32\" or \"i32\", got \"int64\"");
  EXPECT_EQ(msg(x, Attrs::object()), "cast: attribute 'dtype' is required");
  EXPECT_EQ(msg(x, {{"dtype", 32}}), "cast: attribute 'dtype' must be a string, got 32");
  EXPECT_EQ(msg({DType::BF16, {Dim::of(3)}}, {{"dtype", "f32"}}), "cast: x must be F32 or I32, got BF16");
}

}  // namespace
}  // namespace arch::test

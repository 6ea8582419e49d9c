#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

Tensor range10() { return f32({10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); }

std::vector<float> sliced(int64_t start, int64_t end) {
  return values(run1("slice", {range10()}, {{"axis", 0}, {"start", start}, {"end", end}}));
}

TEST(Slice, PythonRanges) {
  EXPECT_EQ(sliced(2, 5), (std::vector<float>{2, 3, 4}));      // x[2:5]
  EXPECT_EQ(sliced(-3, 10), (std::vector<float>{7, 8, 9}));    // x[-3:10]
  EXPECT_EQ(sliced(0, -8), (std::vector<float>{0, 1}));        // x[0:-8]
  EXPECT_EQ(sliced(-100, 2), (std::vector<float>{0, 1}));      // clamped at 0
  EXPECT_EQ(sliced(8, 100), (std::vector<float>{8, 9}));       // clamped at 10
  EXPECT_EQ(sliced(5, 5), (std::vector<float>{}));             // empty
  EXPECT_EQ(sliced(7, 3), (std::vector<float>{}));             // end before start: empty
  EXPECT_EQ(sliced(20, 30), (std::vector<float>{}));
}

TEST(Slice, InnerAndOuterAxes) {
  // x [2, 3, 4] = 0..23; x[:, 1:3, :] and x[..., -2:]
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i) v[i] = float(i);
  Tensor mid = run1("slice", {f32({2, 3, 4}, v)}, {{"axis", 1}, {"start", 1}, {"end", 3}});
  EXPECT_EQ(mid.shape, (Dims{2, 2, 4}));
  EXPECT_EQ(values(mid), (std::vector<float>{4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19, 20, 21, 22, 23}));
  Tensor last = run1("slice", {f32({2, 3, 4}, v)}, {{"axis", -1}, {"start", -2}, {"end", 4}});
  EXPECT_EQ(last.shape, (Dims{2, 3, 2}));
  EXPECT_EQ(values(last), (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23}));
  // It is a copy, not a view.
  EXPECT_FALSE(def_of("slice").view);
  Tensor ids = run1("slice", {i32({2, 3}, {1, 2, 3, 4, 5, 6})}, {{"axis", 1}, {"start", 0}, {"end", 1}});
  EXPECT_EQ(ids.dtype, DType::I32);
  EXPECT_EQ(ints(ids), (std::vector<int32_t>{1, 4}));
}

TEST(Slice, ShapeRule) {
  TypedShape x{DType::F32, {Dim::seq(), Dim::of(12)}};
  auto ok = infer("slice", {x}, {{"axis", 1}, {"start", 4}, {"end", -2}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 6]");
  auto empty = infer("slice", {x}, {{"axis", 1}, {"start", 9}, {"end", 2}});
  ASSERT_TRUE(empty.ok()) << empty.error().message;
  EXPECT_EQ(shape_str(empty->at(0).shape), "[seq, 0]");

  auto seq = infer("slice", {x}, {{"axis", 0}, {"start", 0}, {"end", 1}});
  ASSERT_FALSE(seq.ok());
  EXPECT_EQ(seq.error().message, "slice: axis 0 of x [seq, 12] is seq: only a concrete axis (or a `_` one) can be sliced");
  // A `_` axis (an image's tokens, sized per call) stays `_` until the call's shapes are known.
  auto dyn = infer("slice", {TypedShape{DType::F32, {Dim::dyn(), Dim::of(12)}}}, {{"axis", 0}, {"start", 1}, {"end", 1 << 30}});
  ASSERT_TRUE(dyn.ok()) << dyn.error().message;
  EXPECT_EQ(dyn->at(0).shape[0], Dim::dyn());
  auto required = infer("slice", {x}, {{"axis", 1}});
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.error().message, "slice: attribute 'start' is required");
  // No end: to the end of the axis (a video's frames after the first).
  auto to_end = infer("slice", {x}, {{"axis", 1}, {"start", 5}});
  ASSERT_TRUE(to_end.ok()) << to_end.error().message;
  EXPECT_EQ(to_end->at(0).shape[1], Dim::of(7));
  Tensor rest = run1("slice", {f32({1, 4}, {1, 2, 3, 4})}, {{"axis", 1}, {"start", 1}});
  EXPECT_EQ(values(rest), (std::vector<float>{2, 3, 4}));
  auto range = infer("slice", {x}, {{"axis", -3}, {"start", 0}, {"end", 1}});
  ASSERT_FALSE(range.ok());
  EXPECT_EQ(range.error().message, "slice: axis -3 is out of range for 2 dim(s) (-2 .. 1)");
}

}  // namespace
}  // namespace arch::test

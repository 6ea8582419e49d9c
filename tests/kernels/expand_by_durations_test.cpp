// expand_by_durations: rows repeated by hand, zero durations, min_length's
// zero rows, the `_` its shape rule gives, and durations it refuses.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(ExpandByDurations, RepeatsEachRow) {
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor d = f32({1, 3}, {2, 0, 1});  // any shape with one item per row
  Tensor out = run1("expand_by_durations", {x, d});
  EXPECT_EQ(out.shape, (Dims{3, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{1, 2, 1, 2, 5, 6}));
  Tensor padded = run1("expand_by_durations", {x, d}, {{"min_length", 5}});
  EXPECT_EQ(values(padded), (std::vector<float>{1, 2, 1, 2, 5, 6, 0, 0, 0, 0}));
}

TEST(ExpandByDurations, LengthIsKnownOnlyAtRunTime) {
  auto r = infer("expand_by_durations", {{DType::F32, {Dim::of(25), Dim::of(16)}}, {DType::F32, {Dim::of(1), Dim::of(25)}}});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE((*r)[0].shape[0].concrete());
  EXPECT_EQ((*r)[0].shape[1], Dim::of(16));
}

TEST(ExpandByDurations, RefusesDurationsThatAreNotFrameCounts) {
  Tensor x = f32({2, 1}, {1, 2});
  for (float bad : {-1.0f, 0.5f, NAN}) {
    Runner r;
    std::string e = run_error(r, "expand_by_durations", {x, f32({2}, {1, bad})});
    EXPECT_NE(e.find("durations[1]"), std::string::npos) << e;
  }
  Runner r;
  std::string e = run_error(r, "expand_by_durations", {x, f32({3}, {1, 1, 1})});
  EXPECT_NE(e.find("one item per row"), std::string::npos) << e;
}

}  // namespace
}  // namespace arch::test

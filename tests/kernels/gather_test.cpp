#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(Gather, EachRowPicksFromItsOwnRow) {
  // A router's scores at the experts it chose, two tokens.
  Tensor scores = f32({2, 4}, {0.1f, 0.7f, 0.2f, 0.9f, /**/ 0.5f, 0.3f, 0.8f, 0.4f});
  Tensor chosen = i32({2, 3}, {3, 1, 1, /**/ 2, 0, 3});
  Tensor out = run1("gather", {scores, chosen});
  EXPECT_EQ(out.shape, (Dims{2, 3}));
  EXPECT_EQ(values(out), (std::vector<float>{0.9f, 0.7f, 0.7f, 0.8f, 0.5f, 0.4f}));
}

TEST(Gather, ThreeDims) {
  std::vector<float> x = random_values(2 * 3 * 5, 31);
  std::vector<int32_t> at = {4, 0, 1, 1, 2, 3, 0, 0, 4, 3, 2, 1};
  Tensor out = run1("gather", {f32({2, 3, 5}, x), i32({2, 3, 2}, at)});
  ASSERT_EQ(out.shape, (Dims{2, 3, 2}));
  for (int64_t r = 0; r < 6; ++r)
    for (int64_t j = 0; j < 2; ++j) EXPECT_EQ(out.f32()[r * 2 + j], x[size_t(r * 5 + at[size_t(r * 2 + j)])]);
}

// Indices of 1 along a leading dim serve every row along it: one table of
// relative positions [S, 1, T] read by each of the heads' rows.
TEST(Gather, IndicesOfOneServeEveryRowAlongThatDim) {
  std::vector<float> x = random_values(3 * 2 * 4, 37);  // [S 3, heads 2, N 4]
  std::vector<int32_t> at = {3, 0, 1, 2, 2, 1};         // [S 3, 1, T 2]
  Tensor out = run1("gather", {f32({3, 2, 4}, x), i32({3, 1, 2}, at)});
  ASSERT_EQ(out.shape, (Dims{3, 2, 2}));
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 0; j < 2; ++j)
        EXPECT_EQ(out.f32()[(s * 2 + h) * 2 + j], x[size_t((s * 2 + h) * 4 + at[size_t(s * 2 + j)])]) << s << h << j;
  auto wide = infer("gather", {{DType::F32, {Dim::of(3), Dim::of(2), Dim::of(4)}}, {DType::I32, {Dim::of(1), Dim::of(1), Dim::of(5)}}});
  ASSERT_TRUE(wide.ok()) << wide.error().message;
  EXPECT_EQ((*wide)[0].shape, (Shape{Dim::of(3), Dim::of(2), Dim::of(5)}));
}

TEST(Gather, Errors) {
  Runner r;
  EXPECT_EQ(run_error(r, "gather", {f32({2, 3}, {1, 2, 3, 4, 5, 6}), i32({2, 1}, {0, 3})}),
            "layers.0.test: gather: index 3 at row 1 is outside 0..2");
  auto rank = infer("gather", {{DType::F32, {Dim::of(2), Dim::of(3)}}, {DType::I32, {Dim::of(2)}}});
  ASSERT_FALSE(rank.ok());
  EXPECT_EQ(rank.error().message, "gather: x [2, 3] and indices [2] must have the same rank, at least 1");
  auto rows = infer("gather", {{DType::F32, {Dim::of(2), Dim::of(3)}}, {DType::I32, {Dim::of(4), Dim::of(1)}}});
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.error().message, "gather: x [2, 3] and indices [4, 1] differ before the last dim (where indices may be 1)");
  auto f = infer("gather", {{DType::F32, {Dim::of(2), Dim::of(3)}}, {DType::F32, {Dim::of(2), Dim::of(1)}}});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().message, "gather: indices must be I32, got F32");
}

TEST(OneHot, OnesAtTheIndices) {
  Tensor out = run1("one_hot", {i32({2, 2}, {1, 3, 0, 1})}, {{"depth", 4}});
  EXPECT_EQ(out.shape, (Dims{2, 2, 4}));
  EXPECT_EQ(values(out), (std::vector<float>{0, 1, 0, 0, 0, 0, 0, 1, /**/ 1, 0, 0, 0, 0, 1, 0, 0}));
  // Summed over the chosen: the mask a scatter of ones makes.
  Tensor mask = run1("sum", {out}, {{"axis", 1}});
  EXPECT_EQ(values(mask), (std::vector<float>{0, 1, 0, 1, 1, 1, 0, 0}));
}

TEST(OneHot, Errors) {
  Runner r;
  EXPECT_EQ(run_error(r, "one_hot", {i32({2}, {1, 4})}, {{"depth", 4}}), "layers.0.test: one_hot: index 4 is outside 0..3");
  EXPECT_EQ(run_error(r, "one_hot", {i32({1}, {-1})}, {{"depth", 4}}), "layers.0.test: one_hot: index -1 is outside 0..3");
  auto depth = infer("one_hot", {{DType::I32, {Dim::of(2)}}}, {{"depth", 0}});
  ASSERT_FALSE(depth.ok());
  EXPECT_EQ(depth.error().message, "one_hot: depth must be >= 1, got 0");
}

}  // namespace
}  // namespace arch::test

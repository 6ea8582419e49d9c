#include "tests/kernels/kernel_test_util.h"

#include <algorithm>
#include <numeric>

namespace arch::test {
namespace {

TEST(TopK, HandValuesLargestFirst) {
  auto out = run_all("topk", {f32({2, 5}, {0.5f, -1, 3, 2, 0, /**/ -4, -3, -2, -1, -5})}, {{"k", 3}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (Dims{2, 3}));
  EXPECT_EQ(out[0].dtype, DType::F32);
  EXPECT_EQ(out[1].shape, (Dims{2, 3}));
  EXPECT_EQ(out[1].dtype, DType::I32);
  EXPECT_EQ(values(out[0]), (std::vector<float>{3, 2, 0.5f, -1, -2, -3}));
  EXPECT_EQ(ints(out[1]), (std::vector<int32_t>{2, 3, 0, 3, 2, 1}));
}

TEST(TopK, TiesGoToTheLowerIndexFirst) {
  auto out = run_all("topk", {f32({6}, {1, 2, 2, 0, 2, 1})}, {{"k", 4}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{2, 2, 2, 1}));
  EXPECT_EQ(ints(out[1]), (std::vector<int32_t>{1, 2, 4, 0}));
  // All equal: the first k indices in order.
  auto same = run_all("topk", {f32({1, 4}, {7, 7, 7, 7})}, {{"k", 4}});
  EXPECT_EQ(ints(same[1]), (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(TopK, RowsMatchAStableSort) {
  const int64_t rows = 3, groups = 4, N = 17, k = 5;
  std::vector<float> x = random_values(rows * groups * N, 70);
  for (size_t i = 0; i < x.size(); i += 3) x[i] = std::round(x[i] * 2) / 2;  // some ties
  auto out = run_all("topk", {f32({rows, groups, N}, x)}, {{"k", k}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape, (Dims{rows, groups, k}));
  for (int64_t r = 0; r < rows * groups; ++r) {
    std::vector<int32_t> order(N);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return x[r * N + a] > x[r * N + b]; });
    for (int64_t j = 0; j < k; ++j) {
      EXPECT_EQ(out[1].i32()[r * k + j], order[j]) << r << "," << j;
      EXPECT_EQ(out[0].f32()[r * k + j], x[r * N + order[j]]) << r << "," << j;
    }
  }
}

TEST(TopK, KEqualToNSortsTheWholeRow) {
  auto out = run_all("topk", {f32({3}, {1, 3, 2})}, {{"k", 3}});
  EXPECT_EQ(values(out[0]), (std::vector<float>{3, 2, 1}));
  EXPECT_EQ(ints(out[1]), (std::vector<int32_t>{1, 2, 0}));
}

TEST(TopK, NanRanksAboveNumbers) {
  auto out = run_all("topk", {f32({4}, {1, NAN, INFINITY, -2})}, {{"k", 2}});
  EXPECT_TRUE(std::isnan(out[0].f32()[0]));
  EXPECT_EQ(out[0].f32()[1], INFINITY);
  EXPECT_EQ(ints(out[1]), (std::vector<int32_t>{1, 2}));
}

TEST(TopK, ShapeRule) {
  auto ok = infer("topk", {{DType::F32, {Dim::seq(), Dim::of(8)}}}, {{"k", 2}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 2]");
  EXPECT_EQ(ok->at(0).dtype, DType::F32);
  EXPECT_EQ(shape_str(ok->at(1).shape), "[seq, 2]");
  EXPECT_EQ(ok->at(1).dtype, DType::I32);
  EXPECT_EQ(def_of("topk").num_outputs, 2);

  auto required = infer("topk", {{DType::F32, {Dim::seq(), Dim::of(8)}}});
  ASSERT_FALSE(required.ok());
  EXPECT_EQ(required.error().message, "topk: attribute 'k' is required");
  auto big = infer("topk", {{DType::F32, {Dim::seq(), Dim::of(8)}}}, {{"k", 9}});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message, "topk: k = 9 is more than the last dim of x [seq, 8]");
  auto zero = infer("topk", {{DType::F32, {Dim::of(8)}}}, {{"k", 0}});
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message, "topk: k must be >= 1, got 0");
  EXPECT_FALSE(infer("topk", {{DType::F32, {}}}, {{"k", 1}}).ok());
}

TEST(TopK, KernelChecksKAgainstTheRunTimeRow) {
  // A `seq` last dim passes the shape rule; the kernel checks k <= N.
  auto ok = infer("topk", {{DType::F32, {Dim::of(2), Dim::seq()}}}, {{"k", 4}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  const OpDef& d = def_of("topk");
  Attrs attrs = with_defaults(d, {{"k", 4}});
  std::vector<Tensor> inputs = {f32({2, 3}, {1, 2, 3, 4, 5, 6})};
  std::vector<Tensor> outputs = {Tensor::zeros(DType::F32, {2, 4}), Tensor::zeros(DType::I32, {2, 4})};
  std::unique_ptr<OpState> state;
  std::string where = "router.topk";
  KernelContext ctx{attrs, inputs, outputs, state, 0, where};
  Status st = (*op_table().kernel("topk", "reference"))(ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message, "router.topk: topk: k = 4 must be in 1..3 (x [2, 3])");
}

}  // namespace
}  // namespace arch::test

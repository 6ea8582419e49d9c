#include "tests/kernels/kernel_test_util.h"

#include <algorithm>

namespace arch::test {
namespace {

std::vector<float> iota(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = float(i);
  return v;
}

// out = x.permute(perm) in naive index arithmetic, for any rank.
std::vector<double> naive_permute(const std::vector<float>& x, const Dims& shape, const std::vector<size_t>& perm) {
  const size_t rank = shape.size();
  Dims out_shape(rank);
  for (size_t k = 0; k < rank; ++k) out_shape[k] = shape[perm[k]];
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    // i as an output index (row-major), then the x index it reads
    std::vector<int64_t> oi(rank), xi(rank);
    size_t r = i;
    for (size_t d = rank; d-- > 0;) oi[d] = int64_t(r % size_t(out_shape[d])), r /= size_t(out_shape[d]);
    for (size_t k = 0; k < rank; ++k) xi[perm[k]] = oi[k];
    size_t flat = 0;
    for (size_t d = 0; d < rank; ++d) flat = flat * size_t(shape[d]) + size_t(xi[d]);
    out[i] = x[flat];
  }
  return out;
}

TEST(Transpose, Matrix) {
  // [[0 1 2] [3 4 5]]^T = [[0 3] [1 4] [2 5]]
  Tensor out = run1("transpose", {f32({2, 3}, iota(6))}, {{"perm", {1, 0}}});
  EXPECT_EQ(out.shape, (Dims{3, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(def_of("transpose").view);  // a contiguous copy
}

TEST(Transpose, ImageToTokens) {
  // A conv's output [C, H, W] as [H, W, C] (channels last)
  Tensor hwc = run1("transpose", {f32({2, 2, 3}, iota(12))}, {{"perm", {1, 2, 0}}});
  EXPECT_EQ(hwc.shape, (Dims{2, 3, 2}));
  EXPECT_EQ(values(hwc), (std::vector<float>{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  // Negative entries count from the end: [-1, 0, 1] is [2, 0, 1]
  Tensor last_first = run1("transpose", {f32({2, 2, 3}, iota(12))}, {{"perm", {-1, 0, 1}}});
  EXPECT_EQ(last_first.shape, (Dims{3, 2, 2}));
  EXPECT_EQ(values(last_first), (std::vector<float>{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11}));
}

TEST(Transpose, EveryPermutationOfRank4MatchesNaive) {
  const Dims shape = {2, 3, 4, 5};
  std::vector<float> x = random_values(120, 51);
  std::vector<size_t> perm = {0, 1, 2, 3};
  int count = 0;
  do {
    std::vector<int64_t> p(perm.begin(), perm.end());
    Tensor out = run1("transpose", {f32(shape, x)}, {{"perm", p}});
    Dims want(4);
    for (size_t k = 0; k < 4; ++k) want[k] = shape[perm[k]];
    EXPECT_EQ(out.shape, want);
    expect_close(values(out), naive_permute(x, shape, perm), 0, 0);
    ++count;
  } while (std::next_permutation(perm.begin(), perm.end()));
  EXPECT_EQ(count, 24);
}

TEST(Transpose, AnyDtypeAndIdentity) {
  Tensor ids = run1("transpose", {i32({2, 2}, {1, 2, 3, 4})}, {{"perm", {1, 0}}});
  EXPECT_EQ(ids.dtype, DType::I32);
  EXPECT_EQ(ints(ids), (std::vector<int32_t>{1, 3, 2, 4}));
  Tensor same = run1("transpose", {f32({2, 3}, iota(6))}, {{"perm", {0, 1}}});
  EXPECT_EQ(values(same), iota(6));
  Tensor vec = run1("transpose", {f32({3}, {7, 8, 9})}, {{"perm", {0}}});
  EXPECT_EQ(values(vec), (std::vector<float>{7, 8, 9}));
}

TEST(Transpose, SeqMoves) {
  auto out = infer("transpose", {{DType::F32, {Dim::seq(), Dim::of(12), Dim::of(64)}}}, {{"perm", {1, 0, 2}}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(shape_str(out->at(0).shape), "[12, seq, 64]");
  auto ids = infer("transpose", {{DType::I32, {Dim::seq(), Dim::of(2)}}}, {{"perm", {1, 0}}});
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(ids->at(0).dtype, DType::I32);
  // Run with seq = 3: x [3, 2, 2] -> [2, 3, 2]
  Runner r;
  auto run = r.run("transpose", {f32({3, 2, 2}, iota(12))}, {{"perm", {1, 0, 2}}}, 3);
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->at(0).shape, (Dims{2, 3, 2}));
  EXPECT_EQ(values(run->at(0)), (std::vector<float>{0, 1, 4, 5, 8, 9, 2, 3, 6, 7, 10, 11}));
}

TEST(Transpose, Errors) {
  TypedShape x{DType::F32, {Dim::seq(), Dim::of(4), Dim::of(8)}};
  auto msg = [&](Attrs a) {
    auto r = infer("transpose", {x}, a);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(msg({{"perm", {1, 0}}}), "transpose: perm [1, 0] has 2 entries, x has 3 dim(s)");
  EXPECT_EQ(msg({{"perm", {0, 1, 1}}}), "transpose: perm [0, 1, 1] names axis 1 twice");
  EXPECT_EQ(msg({{"perm", {0, 1, -1}}}), "ok");
  EXPECT_EQ(msg({{"perm", {2, 1, -1}}}), "transpose: perm [2, 1, -1] names axis 2 twice");
  EXPECT_EQ(msg({{"perm", {0, 1, 3}}}), "transpose: axis 3 is out of range for 3 dim(s) (-3 .. 2) (perm [0, 1, 3])");
  EXPECT_EQ(msg(Attrs::object()), "transpose: attribute 'perm' is required");
  EXPECT_EQ(msg({{"perm", 1}}), "transpose: attribute 'perm' must be a list of ints, got 1");
}

}  // namespace
}  // namespace arch::test

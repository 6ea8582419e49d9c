#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// out[s, j, n] = sum_c x_row(s, j)[c] * w[idx[s, j], n, c], in double.
std::vector<double> naive_routed(const std::vector<float>& x, bool per_choice, const std::vector<float>& w,
                                 const std::vector<int32_t>& idx, int64_t S, int64_t k, int64_t N, int64_t K) {
  std::vector<double> out(S * k * N, 0.0);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < k; ++j)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        const float* xr = x.data() + (per_choice ? s * k + j : s) * K;
        for (int64_t c = 0; c < K; ++c) acc += double(xr[c]) * w[(idx[s * k + j] * N + n) * K + c];
        out[(s * k + j) * N + n] = acc;
      }
  return out;
}

TEST(RoutedMatmul, SharedRowPerTokenMatchesNaive) {
  const int64_t S = 4, k = 2, E = 5, N = 6, K = 7;
  std::vector<float> x = random_values(S * K, 80), w = random_values(E * N * K, 81);
  std::vector<int32_t> idx = {0, 3, 4, 1, 2, 2, 1, 0};
  Tensor out = run1("routed_matmul", {f32({S, K}, x), f32({E, N, K}, w), i32({S, k}, idx)});
  EXPECT_EQ(out.shape, (Dims{S, k, N}));
  expect_close(values(out), naive_routed(x, false, w, idx, S, k, N, K), 1e-5, 1e-6);
}

TEST(RoutedMatmul, OneRowPerChoiceMatchesNaive) {
  const int64_t S = 3, k = 2, E = 4, N = 5, K = 8;
  std::vector<float> x = random_values(S * k * K, 82), w = random_values(E * N * K, 83);
  std::vector<int32_t> idx = {3, 0, 1, 1, 2, 3};
  Tensor out = run1("routed_matmul", {f32({S, k, K}, x), f32({E, N, K}, w), i32({S, k}, idx)});
  EXPECT_EQ(out.shape, (Dims{S, k, N}));
  expect_close(values(out), naive_routed(x, true, w, idx, S, k, N, K), 1e-5, 1e-6);
}

TEST(RoutedMatmul, EqualsMatmulWithTheChosenExpert) {
  // One token, one choice: out[0, 0] = x @ w[2]^T, as matmul computes it.
  const int64_t E = 3, N = 4, K = 5;
  std::vector<float> x = random_values(K, 84), w = random_values(E * N * K, 85);
  Tensor out = run1("routed_matmul", {f32({1, K}, x), f32({E, N, K}, w), i32({1, 1}, {2})});
  std::vector<float> w2(w.begin() + 2 * N * K, w.begin() + 3 * N * K);
  Tensor want = run1("matmul", {f32({1, K}, x), f32({N, K}, w2)});
  expect_close(values(out), to_double(values(want)), 1e-6);
}

TEST(RoutedMatmul, OnlyTheChosenExpertsAreRead) {
  // Experts 1 and 3 hold NaN; no row chooses them, so no NaN reaches the output.
  const int64_t S = 2, k = 2, E = 4, N = 3, K = 4;
  std::vector<float> w = random_values(E * N * K, 86);
  for (int64_t e : {1, 3})
    std::fill(w.begin() + e * N * K, w.begin() + (e + 1) * N * K, NAN);
  std::vector<float> x = random_values(S * K, 87);
  std::vector<int32_t> idx = {0, 2, 2, 0};
  Tensor out = run1("routed_matmul", {f32({S, K}, x), f32({E, N, K}, w), i32({S, k}, idx)});
  for (float y : values(out)) EXPECT_FALSE(std::isnan(y));
  expect_close(values(out), naive_routed(x, false, w, idx, S, k, N, K), 1e-5, 1e-6);
}

TEST(RoutedMatmul, ExpertIdOutOfRangeIsAnError) {
  Runner r;
  r.where = "layers.1.moe.up";
  std::vector<Tensor> in = {f32({2, 2}, {1, 2, 3, 4}), f32({3, 1, 2}, {1, 1, 1, 1, 1, 1}), i32({2, 2}, {0, 1, 2, 3})};
  EXPECT_EQ(run_error(r, "routed_matmul", in),
            "layers.1.moe.up: routed_matmul: expert id 3 (idx[1, 1]) is out of range for 3 experts");
  in[2] = i32({2, 2}, {0, -1, 2, 1});
  EXPECT_EQ(run_error(r, "routed_matmul", in),
            "layers.1.moe.up: routed_matmul: expert id -1 (idx[0, 1]) is out of range for 3 experts");
}

TEST(RoutedMatmul, ShapeRule) {
  auto S = Dim::seq();
  TypedShape w{DType::F32, {Dim::of(8), Dim::of(16), Dim::of(32)}};
  TypedShape idx{DType::I32, {S, Dim::of(2)}};
  auto shared = infer("routed_matmul", {{DType::F32, {S, Dim::of(32)}}, w, idx});
  ASSERT_TRUE(shared.ok()) << shared.error().message;
  EXPECT_EQ(shape_str(shared->at(0).shape), "[seq, 2, 16]");
  auto per = infer("routed_matmul", {{DType::F32, {S, Dim::of(2), Dim::of(32)}}, w, idx});
  ASSERT_TRUE(per.ok()) << per.error().message;
  EXPECT_EQ(shape_str(per->at(0).shape), "[seq, 2, 16]");

  auto inner = infer("routed_matmul", {{DType::F32, {S, Dim::of(31)}}, w, idx});
  ASSERT_FALSE(inner.ok());
  EXPECT_EQ(inner.error().message,
            "routed_matmul: the last dim of x 31 is not w's K 32, got x [seq, 31], w [8, 16, 32], idx [seq, 2]");
  auto choices = infer("routed_matmul", {{DType::F32, {S, Dim::of(3), Dim::of(32)}}, w, idx});
  ASSERT_FALSE(choices.ok());
  EXPECT_NE(choices.error().message.find("disagree on k"), std::string::npos) << choices.error().message;
  auto ids = infer("routed_matmul", {{DType::F32, {S, Dim::of(32)}}, w, {DType::F32, {S, Dim::of(2)}}});
  ASSERT_FALSE(ids.ok());
  EXPECT_EQ(ids.error().message, "routed_matmul: idx must be I32, got F32");
  auto flat = infer("routed_matmul", {{DType::F32, {S, Dim::of(32)}}, {DType::F32, {Dim::of(16), Dim::of(32)}}, idx});
  ASSERT_FALSE(flat.ok());
  EXPECT_NE(flat.error().message.find("w must be [experts, N, K]"), std::string::npos);
  EXPECT_TRUE(def_of("routed_matmul").attrs.empty());
}

}  // namespace
}  // namespace arch::test

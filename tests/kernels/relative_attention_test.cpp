// relative_attention: hand cases for each table, and plain bidirectional
// attention when both tables are zero.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(RelativeAttention, ValueTableAddsByOffset) {
  // S 2, one head, D 1, window 1; q = 0: every weight 1/2. Output i adds
  // the mean of rel_v[j - i + 1] over j: i=0 -> (1+20 + 3+30) / 2 = 27,
  // i=1 -> (1+10 + 3+20) / 2 = 17.
  Tensor q = f32({2, 1, 1}, {0, 0}), k = f32({2, 1, 1}, {5, -5}), v = f32({2, 1, 1}, {1, 3});
  Tensor rk = f32({3, 1}, {0, 0, 0}), rv = f32({3, 1}, {10, 20, 30});
  expect_close(values(run1("relative_attention", {q, k, v, rk, rv}, {{"scale", 1.0}})), {27, 17}, 1e-6);
}

TEST(RelativeAttention, KeyTableShiftsTheScores) {
  // k = 0, q = 1, rel_k = 0 0 ln3: query 0 scores key 1 ln3 higher
  // (weights 1/4, 3/4 -> 1/4 + 9/4 = 2.5); query 1 sees offsets -1 and 0,
  // both 0 (-> 2).
  Tensor q = f32({2, 1, 1}, {1, 1}), k = f32({2, 1, 1}, {0, 0}), v = f32({2, 1, 1}, {1, 3});
  Tensor rk = f32({3, 1}, {0, 0, float(std::log(3.0))}), rv = f32({3, 1}, {0, 0, 0});
  expect_close(values(run1("relative_attention", {q, k, v, rk, rv}, {{"scale", 1.0}})), {2.5, 2}, 1e-6);
}

TEST(RelativeAttention, ZeroTablesArePlainAttention) {
  const int64_t S = 7, H = 2, D = 4, W = 2;
  Tensor q = f32({S, H, D}, random_values(size_t(S * H * D), 1));
  Tensor k = f32({S, H, D}, random_values(size_t(S * H * D), 2));
  Tensor v = f32({S, H, D}, random_values(size_t(S * H * D), 3));
  Tensor zero = f32({2 * W + 1, D}, std::vector<float>(size_t((2 * W + 1) * D), 0.0f));
  Tensor got = run1("relative_attention", {q, k, v, zero, zero});
  Tensor want = run1("attention", {q, k, v}, {{"causal", false}});
  ASSERT_EQ(got.shape, want.shape);
  expect_close(values(got), to_double(values(want)), 1e-5);
}

TEST(RelativeAttention, ShapeRuleNamesTheTables) {
  auto r = infer("relative_attention", {{DType::F32, {Dim::of(5), Dim::of(2), Dim::of(4)}},
                                        {DType::F32, {Dim::of(5), Dim::of(2), Dim::of(4)}},
                                        {DType::F32, {Dim::of(5), Dim::of(2), Dim::of(4)}},
                                        {DType::F32, {Dim::of(9), Dim::of(3)}},
                                        {DType::F32, {Dim::of(9), Dim::of(4)}}});
  EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace arch::test

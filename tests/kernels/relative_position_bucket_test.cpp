// relative_position_bucket and arange: T5's buckets at the edges of their
// exact and logarithmic ranges (values worked from transformers' formula
// by hand), both ways and causal; arange over a dim.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

std::vector<int32_t> buckets(const std::vector<int32_t>& rel, bool bidirectional, int64_t n = 32,
                             int64_t max_distance = 128) {
  // One query at 1000; keys at 1000 + d.
  std::vector<int32_t> keys;
  for (int32_t d : rel) keys.push_back(1000 + d);
  Tensor out = run1("relative_position_bucket", {i32({1}, {1000}), i32({int64_t(keys.size())}, keys)},
                    {{"num_buckets", n}, {"max_distance", max_distance}, {"bidirectional", bidirectional}});
  EXPECT_EQ(out.shape, (Dims{1, int64_t(keys.size())}));
  return ints(out);
}

TEST(RelativePositionBucket, BidirectionalHalvesTheBucketsBySign) {
  // 16 per sign, 8 exact: d = -7 is bucket 7, d = -8 the first log bucket
  // (8 + log(1) ...), -20: 8 + int(log(2.5) / log(16) * 8) = 10; -200 and
  // beyond: the last, 15. Keys after the query add 16.
  EXPECT_EQ(buckets({0, -1, -7, -8, -20, -127, -200, 1, 7, 8, 20, 500}, true),
            (std::vector<int32_t>{0, 1, 7, 8, 10, 15, 15, 17, 23, 24, 26, 31}));
}

TEST(RelativePositionBucket, CausalCountsOnlyEarlierKeys) {
  // 32 buckets, 16 exact: later keys are bucket 0; -40: 16 + int(log(2.5) /
  // log(8) * 16) = 23; -1000: 31.
  EXPECT_EQ(buckets({3, 0, -1, -15, -16, -40, -127, -1000}, false),
            (std::vector<int32_t>{0, 0, 1, 15, 16, 23, 31, 31}));
}

TEST(RelativePositionBucket, EveryPairOfQueriesAndKeys) {
  Tensor out = run1("relative_position_bucket", {i32({2}, {0, 2}), i32({3}, {0, 1, 2})}, {{"bidirectional", false}});
  EXPECT_EQ(out.shape, (Dims{2, 3}));
  EXPECT_EQ(ints(out), (std::vector<int32_t>{0, 0, 0, 2, 1, 0}));
}

TEST(RelativePositionBucket, RefusesTooFewBuckets) {
  auto r = infer("relative_position_bucket", {{DType::I32, {Dim::of(2)}}, {DType::I32, {Dim::of(2)}}},
                 {{"num_buckets", 2}, {"bidirectional", true}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("num_buckets"), std::string::npos) << r.error().message;
}

TEST(Arange, CountsAlongTheAxis) {
  Tensor out = run1("arange", {f32({2, 3}, {0, 0, 0, 0, 0, 0})}, {{"axis", -1}});
  EXPECT_EQ(out.dtype, DType::I32);
  EXPECT_EQ(ints(out), (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(ints(run1("arange", {i32({4}, {9, 9, 9, 9})})), (std::vector<int32_t>{0, 1, 2, 3}));
}

}  // namespace
}  // namespace arch::test

// log_bucket_position: DeBERTa-v2's rows of its relative table at the edges
// of the exact and logarithmic ranges (values worked from transformers'
// make_log_bucket_position by hand), shifted by span and clamped; without
// buckets, the plain distance.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// One query at 0, keys at -d: the rows for relative positions d.
std::vector<int32_t> rows(const std::vector<int32_t>& d, int64_t buckets, int64_t max_position, int64_t span) {
  std::vector<int32_t> keys;
  for (int32_t x : d) keys.push_back(-x);
  Tensor out = run1("log_bucket_position", {i32({1}, {0}), i32({int64_t(keys.size())}, keys)},
                    {{"buckets", buckets}, {"max_position", max_position}, {"span", span}});
  EXPECT_EQ(out.shape, (Dims{1, int64_t(keys.size())}));
  return ints(out);
}

TEST(LogBucketPosition, ExactToHalfTheBucketsThenLogSpaced) {
  // 16 buckets over 64 positions: |d| <= 8 exact; 9: 8 + ceil(log(9/8) /
  // log(63/8) * 7) = 9; 20: 8 + ceil(3.108) = 12; 37: 8 + ceil(5.195) = 14;
  // 63: 15 exactly; 100: 17, past the table. + span 16, clamped to 0..31.
  EXPECT_EQ(rows({0, 1, 8, 9, 20, 37, 63, 100, -1, -8, -9, -20, -100}, 16, 64, 16),
            (std::vector<int32_t>{16, 17, 24, 25, 28, 30, 31, 31, 15, 8, 7, 4, 0}));
}

TEST(LogBucketPosition, WithoutBucketsTheDistanceItself) {
  EXPECT_EQ(rows({0, 2, 3, 4, 9, -4, -5, -9}, 0, 0, 4), (std::vector<int32_t>{4, 6, 7, 7, 7, 0, 0, 0}));
}

TEST(LogBucketPosition, EveryPairAndItsErrors) {
  Tensor out = run1("log_bucket_position", {i32({2}, {0, 1}), i32({3}, {0, 1, 2})}, {{"span", 2}});
  EXPECT_EQ(ints(out), (std::vector<int32_t>{2, 1, 0, 3, 2, 1}));
  auto span = infer("log_bucket_position", {{DType::I32, {Dim::of(2)}}, {DType::I32, {Dim::of(2)}}});
  ASSERT_FALSE(span.ok());
  EXPECT_EQ(span.error().message, "log_bucket_position: span must be at least 1, got 0");
}

}  // namespace
}  // namespace arch::test

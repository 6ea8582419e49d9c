// The cpu backend's softmax (softmax_hwy.cpp) against the reference kernel,
// within the op's tolerance.
#include <limits>

#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

TEST(CpuSoftmax, MatchesReference) {
  const Dims shapes[] = {{1},     {1, 1},   {3, 7},     {2, 16},    {5, 17},   {4, 33},
                         {2, 3, 65}, {14, 64, 64}, {1, 151936}, {300, 129}, {700, 301}};
  uint64_t seed = 1;
  for (const Dims& s : shapes)
    for (float scale : {1.0f, 30.0f}) {
      double mx = expect_cpu_matches_reference("softmax", {f32(s, scaled_values(size_t(numel(s)), seed++, scale))},
                                               Attrs::object(), "softmax " + dims_str(s));
      EXPECT_GT(mx, 0.0);
    }
}

TEST(CpuSoftmax, MaskedEntriesAndLargeValues) {
  // -inf entries (a mask) give exactly 0; a shift by 1000 changes nothing.
  const float ninf = -std::numeric_limits<float>::infinity();
  std::vector<float> x = {1000, 1001, ninf, 999, ninf, ninf, ninf, 1002, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000, 998};
  expect_cpu_matches_reference("softmax", {f32({int64_t(x.size())}, x)}, Attrs::object(), "masked");
  auto out = run_on("cpu", "softmax", {f32({int64_t(x.size())}, x)});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].f32()[2], 0.0f);
  double sum = 0;
  for (float v : values((*out)[0])) sum += v;
  EXPECT_NEAR(sum, 1.0, 1e-6);
}

TEST(CpuSoftmax, ErrorsAreTheReferences) {
  std::vector<Tensor> out{Tensor::zeros(DType::F32, {2})};
  std::string ref = kernel_message("reference", "softmax", {i32({2}, {1, 2})}, out);
  EXPECT_FALSE(ref.empty());
  EXPECT_EQ(kernel_message("cpu", "softmax", {i32({2}, {1, 2})}, out), ref);
}

}  // namespace
}  // namespace arch::test

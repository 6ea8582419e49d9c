// The cpu backend's rms_norm and layer_norm (norms_hwy.cpp) against the
// reference kernels, within the ops' tolerance.
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

// Shapes [..., D] with D around the vector widths, and enough rows to run
// in parallel chunks.
const Dims kShapes[] = {{1, 1}, {1, 7}, {3, 16}, {2, 17}, {4, 33}, {5, 64}, {2, 3, 63},
                        {1, 896}, {64, 896}, {3, 4097}, {129, 250}, {160, 1001}};

TEST(CpuNorms, RmsNormMatchesReference) {
  uint64_t seed = 1;
  for (const Dims& s : kShapes)
    for (bool weight : {false, true}) {
      const int64_t D = s.back();
      // an offset so the mean of squares is not near 0
      Tensor x = f32(s, scaled_values(size_t(numel(s)), seed++, 3.0f));
      for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] += 0.5f;
      Tensor w = weight ? f32({D}, scaled_values(size_t(D), seed++, 2.0f)) : absent();
      double mx = expect_cpu_matches_reference("rms_norm", {x, w}, {{"eps", 1e-6}},
                                               "rms_norm " + dims_str(s) + (weight ? " weighted" : ""));
      EXPECT_GT(mx, 0.1);
    }
}

TEST(CpuNorms, LayerNormMatchesReference) {
  uint64_t seed = 50;
  for (const Dims& s : kShapes)
    for (int with = 0; with < 4; ++with) {  // bit 0: weight, bit 1: bias
      const int64_t D = s.back();
      Tensor x = f32(s, scaled_values(size_t(numel(s)), seed++, 4.0f));
      for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] += 10.0f;  // a large mean, subtracted
      Tensor w = with & 1 ? f32({D}, scaled_values(size_t(D), seed++, 2.0f)) : absent();
      Tensor b = with & 2 ? f32({D}, scaled_values(size_t(D), seed++, 1.0f)) : absent();
      double mx = expect_cpu_matches_reference("layer_norm", {x, w, b}, {{"eps", 1e-5}},
                                               "layer_norm " + dims_str(s) + " inputs " + std::to_string(with));
      if (D > 1) {
        EXPECT_GT(mx, 0.1);
      }
    }
}

TEST(CpuNorms, HandValues) {
  // rms_norm([3, 4]) = [3, 4] / sqrt(12.5)
  auto out = run_on("cpu", "rms_norm", {f32({1, 2}, {3, 4}), absent()}, {{"eps", 0.0}});
  ASSERT_TRUE(out.ok());
  EXPECT_NEAR((*out)[0].f32()[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR((*out)[0].f32()[1], 4 / std::sqrt(12.5), 1e-6);
  // layer_norm([1, 3]) = [-1, 1] * 2 + 0.5
  auto ln = run_on("cpu", "layer_norm", {f32({1, 2}, {1, 3}), f32({2}, {2, 2}), f32({2}, {0.5, 0.5})},
                   {{"eps", 0.0}});
  ASSERT_TRUE(ln.ok());
  EXPECT_NEAR((*ln)[0].f32()[0], -1.5, 1e-6);
  EXPECT_NEAR((*ln)[0].f32()[1], 2.5, 1e-6);
}

TEST(CpuNorms, ErrorsAreTheReferences) {
  // A weight of the wrong length, an int32 x: the reference's messages.
  std::vector<Tensor> out{Tensor::zeros(DType::F32, {2, 4})};
  Tensor x = f32({2, 4}, scaled_values(8, 1, 1.0f));
  for (const char* op : {"rms_norm", "layer_norm"}) {
    std::vector<Tensor> in{x, f32({3}, {1, 2, 3})};
    if (std::string(op) == "layer_norm") in.push_back(absent());
    std::string ref = kernel_message("reference", op, in, out, {{"eps", 1e-6}});
    EXPECT_NE(ref.find("does not match"), std::string::npos) << ref;
    EXPECT_EQ(kernel_message("cpu", op, in, out, {{"eps", 1e-6}}), ref);
    in[0] = i32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
    in[1] = absent();
    ref = kernel_message("reference", op, in, out, {{"eps", 1e-6}});
    EXPECT_FALSE(ref.empty());
    EXPECT_EQ(kernel_message("cpu", op, in, out, {{"eps", 1e-6}}), ref);
  }
}

}  // namespace
}  // namespace arch::test

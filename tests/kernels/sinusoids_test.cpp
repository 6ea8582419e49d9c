#include <cmath>

#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

TEST(TimestepEmbedding, DiffusersSinusoids) {
  // dim 4 (half 2), shift 1: freq_k = exp(-ln(10000) k / 1): 1 and 1e-4.
  Tensor out = run1("timestep_embedding", {f32({2}, {0.0f, 500.0f})}, {{"dim", 4}, {"downscale_freq_shift", 1.0}});
  const auto v = values(out);
  EXPECT_EQ(out.shape, (Dims{2, 4}));
  EXPECT_FLOAT_EQ(v[0], 0.0f);           // sin(0)
  EXPECT_FLOAT_EQ(v[2], 1.0f);           // cos(0)
  EXPECT_NEAR(v[4], std::sin(500.0), 1e-5);
  EXPECT_NEAR(v[5], std::sin(500.0 * 1e-4), 1e-6);
  EXPECT_NEAR(v[6], std::cos(500.0), 1e-5);
  // Flipped: cos first; an i32 timestep reads as its value.
  Tensor flip = run1("timestep_embedding", {i32({1}, {500})}, {{"dim", 4}, {"flip_sin_to_cos", true}});
  EXPECT_NEAR(values(flip)[0], std::cos(500.0), 1e-5);
  EXPECT_NEAR(values(flip)[2], std::sin(500.0), 1e-5);
}

TEST(TimestepEmbedding, RefusesAnOddDim) {
  Runner r;
  EXPECT_FALSE(r.run("timestep_embedding", {f32({1}, {1.0f})}, {{"dim", 5}}).ok());
}

TEST(Sincos2d, ColumnCoordinateFirst) {
  // D 4 (a quarter of 1: omega 1), a 2 x 3 grid: token (i, j) = [sin j, cos j, sin i, cos i].
  Tensor out = run1("sincos_2d", {Tensor::zeros(DType::F32, {4, 2, 3})});
  EXPECT_EQ(out.shape, (Dims{6, 4}));
  const auto v = values(out);
  const int64_t token = 1 * 3 + 2;  // row 1, column 2
  EXPECT_NEAR(v[token * 4 + 0], std::sin(2.0), 1e-7);
  EXPECT_NEAR(v[token * 4 + 1], std::cos(2.0), 1e-7);
  EXPECT_NEAR(v[token * 4 + 2], std::sin(1.0), 1e-7);
  EXPECT_NEAR(v[token * 4 + 3], std::cos(1.0), 1e-7);
  // base_size 1 on a grid of 2 halves the coordinates.
  Tensor half = run1("sincos_2d", {Tensor::zeros(DType::F32, {4, 2, 2})}, {{"base_size", 1}});
  EXPECT_NEAR(values(half)[3 * 4 + 0], std::sin(0.5), 1e-7);
}

}  // namespace
}  // namespace arch::test

#include <cmath>

#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// y = x / max(||x||_2, eps) per row of the last dim, in double
std::vector<double> naive_normalize(const std::vector<float>& x, int64_t D, double eps) {
  std::vector<double> y(x.size());
  for (size_t r = 0; r < x.size() / size_t(D); ++r) {
    double sq = 0;
    for (int64_t i = 0; i < D; ++i) sq += double(x[r * D + i]) * x[r * D + i];
    double n = std::max(std::sqrt(sq), eps);
    for (int64_t i = 0; i < D; ++i) y[r * D + i] = x[r * D + i] / n;
  }
  return y;
}

TEST(L2Normalize, HandValues) {
  // [3, 4] / 5; [0, -2] / 2; a zero row stays zero (divided by eps)
  Tensor out = run1("l2_normalize", {f32({3, 2}, {3, 4, 0, -2, 0, 0})});
  EXPECT_EQ(out.shape, (Dims{3, 2}));
  expect_close(values(out), {0.6, 0.8, 0, -1, 0, 0}, 0, 1e-7);
}

TEST(L2Normalize, EpsClampsTinyNorms) {
  // ||[3e-13, 4e-13]|| = 5e-13 < eps = 1e-12: divided by 1e-12, not normalized to unit length
  Tensor tiny = run1("l2_normalize", {f32({2}, {3e-13f, 4e-13f})});
  expect_close(values(tiny), {0.3, 0.4}, 1e-6);
  // A larger eps: [1, 0] / max(1, 2)
  Tensor big = run1("l2_normalize", {f32({2}, {1, 0})}, {{"eps", 2.0}});
  expect_close(values(big), {0.5, 0}, 0, 1e-7);
}

TEST(L2Normalize, MatchesDouble) {
  std::vector<float> x = random_values(4 * 3 * 16, 61);
  for (size_t i = 0; i < x.size(); ++i) x[i] *= float(1 + i % 7) * 10;
  Tensor out = run1("l2_normalize", {f32({4, 3, 16}, x)});
  EXPECT_EQ(out.shape, (Dims{4, 3, 16}));
  expect_close(values(out), naive_normalize(x, 16, 1e-12), 1e-6, 1e-7);
  // Each row has unit length
  for (int r = 0; r < 12; ++r) {
    double sq = 0;
    for (int i = 0; i < 16; ++i) sq += double(out.f32()[r * 16 + i]) * out.f32()[r * 16 + i];
    EXPECT_NEAR(sq, 1.0, 1e-6) << "row " << r;
  }
}

TEST(L2Normalize, ShapeRule) {
  auto ok = infer("l2_normalize", {{DType::F32, {Dim::seq(), Dim::of(512)}}});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 512]");
  auto scalar = infer("l2_normalize", {{DType::F32, {}}});
  ASSERT_FALSE(scalar.ok());
  EXPECT_EQ(scalar.error().message, "l2_normalize: x must have at least one dim, got []");
  auto eps = infer("l2_normalize", {{DType::F32, {Dim::of(4)}}}, {{"eps", "small"}});
  ASSERT_FALSE(eps.ok());
  EXPECT_EQ(eps.error().message, "l2_normalize: attribute 'eps' must be a float, got \"small\"");
}

// Over a leading axis (a video's channels, axis 0 of [C, T, H, W]): each
// position normalised over its own channels, as F.normalize(x, dim=0).
TEST(L2Normalize, OverALeadingAxis) {
  // x [2 channels, 3 positions]: position j holds (x[0, j], x[1, j]).
  Tensor out = run1("l2_normalize", {f32({2, 3}, {3, 0, 1, 4, 2, 1})}, {{"axis", 0}});
  const float r2 = 1.0f / std::sqrt(2.0f);
  const std::vector<float> want = {0.6f, 0, r2, 0.8f, 1, r2};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out.f32()[i], want[i], 1e-6f) << i;
  // The same as the last axis of the transpose, on a video-shaped tensor.
  auto v = random_values(2 * 5 * 3 * 4, 9);
  Tensor video = run1("l2_normalize", {f32({5, 2, 3, 4}, v)}, {{"axis", 0}});
  for (int64_t p = 0; p < 24; ++p) {
    double sq = 0;
    for (int64_t c = 0; c < 5; ++c) sq += double(video.f32()[c * 24 + p]) * video.f32()[c * 24 + p];
    EXPECT_NEAR(sq, 1.0, 1e-5) << "position " << p;
  }
  auto bad = infer("l2_normalize", {{DType::F32, shape_of({2, 3})}}, {{"axis", 2}});
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace arch::test

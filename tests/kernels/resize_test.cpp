// resize: torch's interpolate worked by hand for a ramp (align_corners
// false): bilinear 2 -> 4, bicubic 2 -> 4 (A = -0.75, overshooting at the
// ends), antialiased bilinear 4 -> 2 (a widened triangle, renormalised), a
// size kept unchanged by every mode, and the shape from like's last dims.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

std::vector<float> resized(const std::vector<float>& row, int64_t out, const std::string& mode, bool antialias) {
  Tensor r = run1("resize", {f32({1, 1, int64_t(row.size())}, row), f32({1, 1, out}, std::vector<float>(size_t(out), 0))},
                  {{"mode", mode}, {"antialias", antialias}});
  EXPECT_EQ(r.shape, (Dims{1, 1, out}));
  return values(r);
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(Resize, BilinearAndBicubicUpByTwo) {
  expect_near(resized({0, 1}, 4, "bilinear", false), {0, 0.25, 0.75, 1});
  // Taps at -1.75.. (clamped to the border): w = cubic(1.75), cubic(0.75), cubic(0.25), cubic(1.25).
  expect_near(resized({0, 1}, 4, "bicubic", false), {-0.10546875, 0.2265625, 0.7734375, 1.10546875});
}

TEST(Resize, AntialiasedBilinearDownByTwo) {
  // Output 0 centred at 1 with support 2: inputs 0, 1, 2 weighted 0.75, 0.75, 0.25, over 1.75.
  expect_near(resized({0, 1, 2, 3}, 2, "bilinear", true), {1.25 / 1.75, 4.0 / 1.75});
}

TEST(Resize, TheSameSizeIsUnchangedAndBothAxesResize) {
  const std::vector<float> x = random_values(2 * 3 * 4, 41);
  for (const char* mode : {"bilinear", "bicubic"})
    for (bool aa : {false, true}) {
      Tensor same = run1("resize", {f32({2, 3, 4}, x), f32({3, 4}, std::vector<float>(12, 0))}, {{"mode", mode}, {"antialias", aa}});
      for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(same.f32()[i], x[i], 1e-6) << mode << aa << i;
    }
  Tensor both = run1("resize", {f32({2, 3, 4}, x), f32({5, 6}, std::vector<float>(30, 0))}, {{"mode", "bicubic"}});
  EXPECT_EQ(both.shape, (Dims{2, 5, 6}));
  auto bad = infer("resize", {{DType::F32, {Dim::of(4)}}, {DType::F32, {Dim::of(2), Dim::of(2)}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "resize: x [4] and like [2, 2] must each have at least [H, W]");
}

}  // namespace
}  // namespace arch::test

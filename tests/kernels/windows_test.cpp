// Swin's window ops and pixel_shuffle, worked by hand on small maps: which
// token lands where (rolled by the shift), the inverse, the shifted-window
// mask's regions, Swin V2's offsets and their index, PixelShuffle's layout.
#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

Attrs win(int64_t w, int64_t s) { return {{"window", w}, {"shift", s}}; }

TEST(Windows, PartitionRollsThenCutsAndReverseUndoesIt) {
  std::vector<float> rows(16);
  for (int i = 0; i < 16; ++i) rows[size_t(i)] = float(i);  // a 4 x 4 map, one channel: each token its row
  const Tensor x = f32({16, 1}, rows), like = f32({1, 4, 4}, std::vector<float>(16, 0));
  Tensor plain = run1("window_partition", {x, like}, win(2, 0));
  ASSERT_EQ(plain.shape, (Dims{4, 4, 1}));
  // [token, window]: window 1 is rows 0-1, cols 2-3; its token 2 is (1, 2) = row 6.
  EXPECT_EQ(plain.f32()[2 * 4 + 1], 6.0f);
  Tensor shifted = run1("window_partition", {x, like}, win(2, 1));
  EXPECT_EQ(shifted.f32()[0 * 4 + 0], 5.0f);  // rolled by -1: (0, 0) holds (1, 1)
  EXPECT_EQ(shifted.f32()[3 * 4 + 3], 0.0f);  // (3, 3) holds (0, 0), wrapped
  Tensor back = run1("window_reverse", {shifted, like}, win(2, 1));
  EXPECT_EQ(back.shape, (Dims{16, 1}));
  EXPECT_EQ(values(back), rows);
  Runner r;
  EXPECT_EQ(run_error(r, "window_partition", {f32({12, 1}, std::vector<float>(12, 0)), f32({1, 3, 4}, std::vector<float>(12, 0))}, win(2, 0)),
            "layers.0.test: window_partition: the map 3 x 4 is not a whole number of 2 x 2 windows (pad it first)");
}

TEST(Windows, TheMaskSeparatesTheRolledRegions) {
  Tensor m = run1("shifted_window_mask", {f32({1, 4, 4}, std::vector<float>(16, 0))}, {{"window", 2}, {"shift", 1}, {"value", -100.0}});
  ASSERT_EQ(m.shape, (Dims{4, 4, 4}));
  for (int i = 0; i < 16; ++i) EXPECT_EQ(m.f32()[i], 0.0f) << i;  // window 0: one region
  // window 3: (2, 2), (2, 3), (3, 2), (3, 3) are four regions: all but the diagonal masked.
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) EXPECT_EQ(m.f32()[(3 * 4 + a) * 4 + b], a == b ? 0.0f : -100.0f) << a << b;
  Tensor none = run1("shifted_window_mask", {f32({1, 4, 4}, std::vector<float>(16, 0))}, win(2, 0));
  for (float v : values(none)) EXPECT_EQ(v, 0.0f);
}

TEST(Windows, SwinV2OffsetsAndTheirIndex) {
  Tensor c = run1("window_coords", {}, {{"window", 2}});
  ASSERT_EQ(c.shape, (Dims{9, 2}));
  const float m = float(std::log2(9.0) / 3.0);  // offset 1 of a window of 2: 1 / 1 * 8, log2(9) / log2(8)
  EXPECT_NEAR(c.f32()[2 * 2], -m, 1e-6);        // row (dh -1, dw +1)
  EXPECT_NEAR(c.f32()[2 * 2 + 1], m, 1e-6);
  EXPECT_EQ(c.f32()[4 * 2], 0.0f);              // the centre
  Tensor i = run1("window_relative_index", {}, {{"window", 2}});
  ASSERT_EQ(i.shape, (Dims{4, 4}));
  EXPECT_EQ(ints(i), (std::vector<int32_t>{4, 3, 1, 0, 5, 4, 2, 1, 7, 6, 4, 3, 8, 7, 5, 4}));
}

TEST(PixelShuffle, ChannelsSpreadIntoPixels) {
  Tensor y = run1("pixel_shuffle", {f32({8, 1, 1}, {1, 2, 3, 4, 5, 6, 7, 8})}, {{"factor", 2}});
  ASSERT_EQ(y.shape, (Dims{2, 2, 2}));
  EXPECT_EQ(values(y), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  Tensor z = run1("pixel_shuffle", {f32({4, 1, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}, {{"factor", 2}});
  ASSERT_EQ(z.shape, (Dims{1, 2, 4}));
  // out[0, i, 2w + j] = x[2i + j, 0, w]
  EXPECT_EQ(values(z), (std::vector<float>{1, 3, 2, 4, 5, 7, 6, 8}));
}

}  // namespace
}  // namespace arch::test

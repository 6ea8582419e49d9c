#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

// 2 channels of 2x4: x[c, r, k] = 100 c + 10 r + k.
Tensor image() {
  std::vector<float> v;
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < 2; ++r)
      for (int k = 0; k < 4; ++k) v.push_back(float(100 * c + 10 * r + k));
  return f32({2, 2, 4}, v);
}

TEST(Patchify, PacksAsFluxDoes) {
  // Flux's _pack_latents: view(c, h/2, 2, w/2, 2).permute(h/2, w/2, c, 2, 2):
  // token j (the j-th 2x2 patch of the one patch row) holds channel 0's
  // patch, then channel 1's, each row by row.
  Tensor t = run1("patchify", {image()});
  EXPECT_EQ(t.shape, (Dims{2, 8}));
  EXPECT_EQ(values(t), (std::vector<float>{0, 1, 10, 11, 100, 101, 110, 111, 2, 3, 12, 13, 102, 103, 112, 113}));
}

TEST(Patchify, UnpatchifyIsItsInverse) {
  Tensor x = image();
  Tensor back = run1("unpatchify", {run1("patchify", {x}), x});
  EXPECT_EQ(back.shape, x.shape);
  EXPECT_EQ(values(back), values(x));
}

TEST(Patchify, IdsAreZeroRowColumn) {
  Tensor ids = run1("patch_ids", {f32({1, 4, 6}, std::vector<float>(24, 0.0f))});
  EXPECT_EQ(ids.shape, (Dims{6, 3}));
  EXPECT_EQ(values(ids), (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 1, 0, 0, 1, 1, 0, 1, 2}));
}

TEST(Patchify, RefusesASizeThePatchDoesNotDivide) {
  Runner r;
  EXPECT_FALSE(r.run("patchify", {f32({1, 3, 4}, std::vector<float>(12, 0.0f))}).ok());
  EXPECT_FALSE(r.run("unpatchify", {f32({3, 4}, std::vector<float>(12, 0.0f)), image()}).ok());
}

// A video [C, F, H, W] frame by frame: Wan's (1, 2, 2) patch embedding
// flattened, tokens frame-major (f, row, col), each token's features the
// patch's (c, row, col); ids (f, row, col).
TEST(Patchify, AVideoFrameByFrame) {
  // 2 channels, 2 frames of 2x4: x[c, f, r, k] = 1000 f + 100 c + 10 r + k
  std::vector<float> v;
  for (int c = 0; c < 2; ++c)
    for (int f = 0; f < 2; ++f)
      for (int r = 0; r < 2; ++r)
        for (int k = 0; k < 4; ++k) v.push_back(float(1000 * f + 100 * c + 10 * r + k));
  Tensor x = f32({2, 2, 2, 4}, v);
  Tensor t = run1("patchify", {x});
  ASSERT_EQ(t.shape, (Dims{4, 8}));
  // The second frame's first token: frame 1's first patch of both channels.
  EXPECT_EQ(std::vector<float>(t.f32() + 16, t.f32() + 24), (std::vector<float>{1000, 1001, 1010, 1011, 1100, 1101, 1110, 1111}));
  Tensor back = run1("unpatchify", {t, x});
  EXPECT_EQ(back.shape, x.shape);
  EXPECT_EQ(values(back), values(x));
  Tensor ids = run1("patch_ids", {x});
  EXPECT_EQ(values(ids), (std::vector<float>{0, 0, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1}));
  // Each frame of a video upsampled alike.
  Tensor up = run1("upsample_nearest", {f32({1, 2, 1, 2}, {1, 2, 3, 4})}, {{"scale", 2}});
  ASSERT_EQ(up.shape, (Dims{1, 2, 2, 4}));
  EXPECT_EQ(values(up), (std::vector<float>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
}

}  // namespace
}  // namespace arch::test

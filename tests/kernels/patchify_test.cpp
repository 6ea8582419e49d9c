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

}  // namespace
}  // namespace arch::test

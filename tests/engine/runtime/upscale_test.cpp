// Upscaling through the swin2sr golden: one tile is the model's own pass
// over the image mirrored out to whole windows (torch's reflect pad), then
// cropped; tiles are put together from each tile's own part.
#include <gtest/gtest.h>

#include "engine/runtime/forward.h"
#include "engine/core/limits.h"
#include "engine/runtime/upscale.h"
#include "tests/shared_data.h"

namespace arch {
namespace {

Tensor ramp(int64_t H, int64_t W) {
  Tensor t = Tensor::zeros(DType::F32, {3, H, W});
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = float((i * 37) % 101) / 100.0f;
  return t;
}

TEST(Upscale, OneTileIsTheModelOverTheImageMirroredToWholeWindows) {
  const std::string dir = testing::golden_dir("swin2sr");
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(upscale_factor(**m), 2);
  EXPECT_EQ(upscale_multiple(**m), 8);
  const Tensor img = ramp(13, 10);
  auto up = upscale_image(**m, img);
  ASSERT_TRUE(up.ok()) << up.error().message;
  ASSERT_EQ(up->shape, (Dims{3, 26, 20}));
  // torch's reflect pad to 16 x 16: row 13 is row 11, 14 is 10, 15 is 9.
  Tensor padded = Tensor::zeros(DType::F32, {3, 16, 16});
  auto reflect = [](int64_t i, int64_t n) { return i < n ? i : 2 * (n - 1) - i; };
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 16; ++y)
      for (int64_t x = 0; x < 16; ++x) padded.f32()[(c * 16 + y) * 16 + x] = img.f32()[(c * 13 + reflect(y, 13)) * 10 + reflect(x, 10)];
  auto whole = forward(**m, {{"pixel_values", padded}}, {"reconstruction"});
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  const Tensor& r = whole->at("reconstruction");
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 26; ++y)
      for (int64_t x = 0; x < 20; ++x) ASSERT_EQ(up->f32()[(c * 26 + y) * 20 + x], r.f32()[(c * 32 + y) * 32 + x]) << c << y << x;
}

TEST(Upscale, TilesAreEachTheirOwnPart) {
  const std::string dir = testing::golden_dir("swin2sr");
  ARCH_REQUIRE_SHARED(dir);
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok());
  const Tensor img = ramp(40, 56);
  UpscaleOptions opt;
  opt.tile = 24, opt.overlap = 8;
  int64_t calls = 0, total = 0;
  opt.progress = [&](int64_t done, int64_t all) { calls = done, total = all; };
  auto up = upscale_image(**m, img, opt);
  ASSERT_TRUE(up.ok()) << up.error().message;
  ASSERT_EQ(up->shape, (Dims{3, 80, 112}));
  // Starts every 16: rows 0, 16 (flush: 40 - 24); columns 0, 16, 32 (56 - 24). 2 x 3 tiles.
  EXPECT_EQ(total, 6);
  EXPECT_EQ(calls, 6);
  // The middle column's tile at (0, 16) owns input rows 0..20 (the middle of its overlap
  // with the tile below, 16..24) and columns 20..36: run it alone and compare.
  Tensor tile = Tensor::zeros(DType::F32, {3, 24, 24});
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 24; ++y)
      for (int64_t x = 0; x < 24; ++x) tile.f32()[(c * 24 + y) * 24 + x] = img.f32()[(c * 40 + y) * 56 + 16 + x];
  auto alone = forward(**m, {{"pixel_values", tile}}, {"reconstruction"});
  ASSERT_TRUE(alone.ok());
  const Tensor& r = alone->at("reconstruction");
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < 40; ++y)
      for (int64_t x = 40; x < 72; ++x) ASSERT_EQ(up->f32()[(c * 80 + y) * 112 + x], r.f32()[(c * 48 + y) * 48 + x - 32]) << c << y << x;
  // The output is bounded before any tile runs: image_pixels lowered below 80 x 112.
  const int64_t was = limit("image_pixels");
  ASSERT_TRUE(set_limit("image_pixels", 80 * 112 - 1).ok());
  auto big = upscale_image(**m, img, opt);
  ASSERT_TRUE(set_limit("image_pixels", was).ok());
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("an upscaled image of 40x56 times 2"), std::string::npos) << big.error().message;
  opt.tile = 16;
  auto small = upscale_image(**m, img, opt);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.error().message, "a tile of 16 pixels leaves no room beside an overlap of 8 (and a window of 8)");
}

}  // namespace
}  // namespace arch

#include "importer/image/image.h"

#include <gtest/gtest.h>
#include <zlib.h>
#include <stb/stb_image_write.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "importer/image/image_preprocess.h"
#include "importer/image/image_processor_config.h"
#include "importer/image/image_resample.h"
#include "tests/test_files.h"

// Debian's libstb holds stb_image_write's implementation too: no
// STB_IMAGE_WRITE_IMPLEMENTATION here.

namespace arch {
namespace {

using json = nlohmann::json;
using testing::TempDir;
using testing::read_file;
using testing::write_file;

// A 3x2 (W x H) RGB image, row-major, interleaved, as stb_image_write takes it.
const std::vector<unsigned char> kPixels = {
    255, 0,   0,  0,  255, 0,   0,   0,   255,  // row 0: red, green, blue
    10,  20,  30, 40, 50,  60,  255, 255, 255,  // row 1
};

void expect_pixels(const Tensor& t, const std::vector<unsigned char>& rgb, int w, int h) {
  ASSERT_EQ(t.dtype, DType::F32);
  ASSERT_EQ(t.shape, (Dims{3, h, w}));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        EXPECT_EQ(t.f32()[(c * h + y) * w + x], float(rgb[(y * w + x) * 3 + c])) << "c" << c << " y" << y << " x" << x;
}

std::string write_png(const TempDir& dir, const std::string& name, int w, int h, int comp,
                      const std::vector<unsigned char>& data) {
  std::string path = dir / name;
  EXPECT_NE(stbi_write_png(path.c_str(), w, h, comp, data.data(), w * comp), 0);
  return path;
}

// A planar [C, H, W] float tensor from a function of (c, y, x).
template <class F>
Tensor image_of(int c, int h, int w, F f) {
  Tensor t = Tensor::zeros(DType::F32, {c, h, w});
  for (int k = 0; k < c; ++k)
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x) t.f32()[(k * h + y) * w + x] = float(f(k, y, x));
  return t;
}

std::vector<float> plane(const Tensor& t, int c) {
  const int64_t n = t.shape[1] * t.shape[2];
  return std::vector<float>(t.f32() + c * n, t.f32() + (c + 1) * n);
}

// ---------------------------------------------------------------------------
// load_image

TEST(LoadImage, ReadsPngPixels) {
  TempDir dir;
  std::string path = write_png(dir, "rgb.png", 3, 2, 3, kPixels);
  auto img = load_image(path);
  ASSERT_TRUE(img.ok()) << img.error().message;
  expect_pixels(*img, kPixels, 3, 2);
}

TEST(LoadImage, ReadsBmpPixels) {
  TempDir dir;
  std::string path = dir / "rgb.bmp";
  ASSERT_NE(stbi_write_bmp(path.c_str(), 3, 2, 3, kPixels.data()), 0);
  auto img = load_image(path);
  ASSERT_TRUE(img.ok()) << img.error().message;
  expect_pixels(*img, kPixels, 3, 2);
}

TEST(LoadImage, GrayIsReplicatedAndAlphaDropped) {
  TempDir dir;
  auto gray = load_image(write_png(dir, "gray.png", 2, 1, 1, {7, 200}));
  ASSERT_TRUE(gray.ok()) << gray.error().message;
  expect_pixels(*gray, {7, 7, 7, 200, 200, 200}, 2, 1);

  // Alpha is dropped, not composited onto a background (PIL's convert("RGB")).
  auto rgba = load_image(write_png(dir, "rgba.png", 2, 1, 4, {10, 20, 30, 0, 40, 50, 60, 128}));
  ASSERT_TRUE(rgba.ok()) << rgba.error().message;
  expect_pixels(*rgba, {10, 20, 30, 40, 50, 60}, 2, 1);
}

TEST(LoadImage, ReadsJpegCloseToTheOriginal) {
  TempDir dir;
  std::vector<unsigned char> flat;
  for (int i = 0; i < 16 * 16; ++i) flat.insert(flat.end(), {200, 120, 40});
  std::string path = dir / "flat.jpg";
  ASSERT_NE(stbi_write_jpg(path.c_str(), 16, 16, 3, flat.data(), 100), 0);
  auto img = load_image(path);
  ASSERT_TRUE(img.ok()) << img.error().message;
  ASSERT_EQ(img->shape, (Dims{3, 16, 16}));
  const float want[3] = {200, 120, 40};
  for (int c = 0; c < 3; ++c)
    for (float v : plane(*img, c)) EXPECT_NEAR(v, want[c], 3.0f);  // lossy, and YCbCr round trip
}

// A 2x2 GIF made by hand: a 4-colour global palette (red, green, blue,
// white), frame 1 with indices 0 1 / 2 3, frame 2 with 3 2 / 1 0 (LZW,
// minimum code size 2).
const std::string kTwoFrameGif = std::string("GIF89a\x02\x00\x02\x00\x81\x00\x00", 13) +
                                 std::string("\xff\x00\x00\x00\xff\x00\x00\x00\xff\xff\xff\xff", 12) +
                                 std::string("\x2c\x00\x00\x00\x00\x02\x00\x02\x00\x00", 10) +
                                 std::string("\x02\x03\x44\x34\x05\x00", 6) +
                                 std::string("\x2c\x00\x00\x00\x00\x02\x00\x02\x00\x00", 10) +
                                 std::string("\x02\x03\x9c\x02\x05\x00", 6) + "\x3b";

TEST(LoadImage, ReadsTheFirstFrameOfAGif) {
  TempDir dir;
  write_file(dir / "two.gif", kTwoFrameGif);
  auto img = load_image(dir / "two.gif");
  ASSERT_TRUE(img.ok()) << img.error().message;
  expect_pixels(*img, {255, 0, 0, 0, 255, 0, 0, 0, 255, 255, 255, 255}, 2, 2);
}

TEST(LoadImage, MissingFileNamesThePath) {
  TempDir dir;
  auto img = load_image(dir / "nope.png");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, dir / "nope.png");
  EXPECT_CONTAINS(img.error().message, "No such file");
}

TEST(LoadImage, DirectoryAndEmptyFileAreErrors) {
  TempDir dir;
  auto d = load_image(dir.path());
  ASSERT_FALSE(d.ok());
  EXPECT_CONTAINS(d.error().message, "directory");
  write_file(dir / "empty.png", "");
  auto e = load_image(dir / "empty.png");
  ASSERT_FALSE(e.ok());
  EXPECT_CONTAINS(e.error().message, dir / "empty.png");
  EXPECT_CONTAINS(e.error().message, "empty file");
}

TEST(LoadImage, TextFileNamedPngIsNotAnImage) {
  TempDir dir;
  write_file(dir / "notes.png", "these are my notes, not a picture\n");
  auto img = load_image(dir / "notes.png");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, dir / "notes.png");
  EXPECT_CONTAINS(img.error().message, "not a PNG, JPEG, BMP or GIF image (the file is text)");
}

TEST(LoadImage, OtherFormatsAreNamed) {
  TempDir dir;
  write_file(dir / "x.webp", std::string("RIFF\x10\x00\x00\x00WEBPVP8 ", 16));
  auto img = load_image(dir / "x.webp");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, "WebP");
}

TEST(LoadImage, TruncatedPngIsAnError) {
  TempDir dir;
  std::vector<unsigned char> noise;
  for (int i = 0; i < 32 * 32 * 3; ++i) noise.push_back((unsigned char)(i * 7919 % 251));
  std::string bytes = read_file(write_png(dir, "full.png", 32, 32, 3, noise));
  ASSERT_GT(bytes.size(), 100u);
  for (size_t keep : {size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    write_file(dir / "cut.png", bytes.substr(0, keep));
    auto img = load_image(dir / "cut.png");
    ASSERT_FALSE(img.ok()) << "kept " << keep << " of " << bytes.size() << " bytes";
    EXPECT_CONTAINS(img.error().message, dir / "cut.png");
    EXPECT_CONTAINS(img.error().message, "truncated PNG");
  }
}

TEST(LoadImage, CorruptPngDataGivesStbImagesReason) {
  TempDir dir;
  std::string bytes = read_file(write_png(dir, "ok.png", 3, 2, 3, kPixels));
  size_t idat = bytes.find("IDAT");
  ASSERT_NE(idat, std::string::npos);
  bytes[idat + 4] = '\x00';  // the zlib header: compression method 0 is not deflate
  bytes[idat + 5] = '\x00';
  write_file(dir / "crc.png", bytes);  // as damaged on a disk: the chunk's CRC no longer fits
  auto damaged = load_image(dir / "crc.png");
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().message, dir / "crc.png" + ": corrupt PNG (its IDAT chunk fails its CRC check)");
  // Made so (the CRC recomputed): stb_image's reason.
  const uint32_t length = uint32_t((unsigned char)bytes[idat - 4]) << 24 | uint32_t((unsigned char)bytes[idat - 3]) << 16 |
                          uint32_t((unsigned char)bytes[idat - 2]) << 8 | uint32_t((unsigned char)bytes[idat - 1]);
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data() + idat), uInt(length + 4));
  for (int i = 0; i < 4; ++i) bytes[idat + 4 + length + size_t(i)] = char((crc >> (24 - 8 * i)) & 0xff);
  write_file(dir / "bad.png", bytes);
  auto img = load_image(dir / "bad.png");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, dir / "bad.png");
  EXPECT_CONTAINS(img.error().message, "cannot decode PNG image: ");
  EXPECT_CONTAINS(img.error().message, "bad compression");  // stb_image: not deflate
}

// A PNG's size is read from its IHDR before anything is decoded: a bomb is
// refused by the named limit, not reported as an unknown image type.
TEST(LoadImage, AHugeClaimedPngIsRefusedByItsLimit) {
  TempDir dir;
  std::string bytes = read_file(write_png(dir, "ok.png", 3, 2, 3, kPixels));
  auto set_be32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) bytes[at + size_t(i)] = char((v >> (24 - 8 * i)) & 0xff);
  };
  set_be32(16, 100000);  // IHDR's width and height
  set_be32(20, 100000);
  set_be32(29, uint32_t(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data() + 12), 17)));
  write_file(dir / "bomb.png", bytes);
  auto img = load_image(dir / "bomb.png");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, dir / "bomb.png" + ": PNG image of 100000x100000 pixels (10000000000) exceeds the limit 'image_pixels' (178956970)");
}

// Garbage where the compressed pixels should be: a PNG's reason, not a JPEG's.
TEST(LoadImage, AGarbagePngStreamGetsAPngReason) {
  TempDir dir;
  std::string bytes = read_file(write_png(dir, "ok.png", 3, 2, 3, kPixels));
  const size_t idat = bytes.find("IDAT");
  const uint32_t length = uint32_t((unsigned char)bytes[idat - 2]) << 8 | uint32_t((unsigned char)bytes[idat - 1]);
  for (uint32_t i = 0; i < length; ++i) bytes[idat + 4 + i] = char(0xa5 ^ (i * 37));
  const uLong crc = crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data() + idat), uInt(length + 4));
  for (int i = 0; i < 4; ++i) bytes[idat + 4 + length + size_t(i)] = char((crc >> (24 - 8 * i)) & 0xff);
  write_file(dir / "garbage.png", bytes);
  auto img = load_image(dir / "garbage.png");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, dir / "garbage.png" + ": cannot decode PNG image: ");
  EXPECT_EQ(img.error().message.find("JPEG"), std::string::npos) << img.error().message;
}

TEST(LoadImage, TruncatedJpegBmpAndGifAreErrors) {
  TempDir dir;
  std::vector<unsigned char> noise;
  for (int i = 0; i < 16 * 16 * 3; ++i) noise.push_back((unsigned char)(i * 31 % 256));
  ASSERT_NE(stbi_write_jpg((dir / "a.jpg").c_str(), 16, 16, 3, noise.data(), 90), 0);
  ASSERT_NE(stbi_write_bmp((dir / "a.bmp").c_str(), 16, 16, 3, noise.data()), 0);
  write_file(dir / "a.gif", kTwoFrameGif);
  const struct {
    const char* name;
    size_t cut;  // bytes removed from the end
    const char* message;
  } cases[] = {
      {"a.jpg", 2, "truncated JPEG"},           // just the end-of-image marker
      {"a.jpg", 100, "truncated JPEG"},         // inside the scan data
      {"a.bmp", 1, "truncated BMP"},            // one byte of pixels
      {"a.gif", 1 + 6 + 10 + 3, "truncated GIF"},  // inside the first frame's data
  };
  for (const auto& c : cases) {
    std::string bytes = read_file(dir / c.name);
    ASSERT_GT(bytes.size(), c.cut);
    std::string path = dir / (std::string("cut-") + c.name);
    write_file(path, bytes.substr(0, bytes.size() - c.cut));
    auto img = load_image(path);
    ASSERT_FALSE(img.ok()) << c.name << " cut by " << c.cut;
    EXPECT_CONTAINS(img.error().message, path);
    EXPECT_CONTAINS(img.error().message, c.message);
  }
  // A header whose pixel array would pass int64 bytes (fuzz_image_decode:
  // a signed overflow in the size check): truncated, its size in full.
  std::string huge = read_file(dir / "a.bmp").substr(0, 54);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) huge[at + size_t(i)] = char(v >> (8 * i));
  };
  put32(18, 0x5d000087u);  // width 1560281223
  put32(22, 0x7fffffffu);  // height 2^31 - 1
  write_file(dir / "huge.bmp", huge);
  auto img = load_image(dir / "huge.bmp");
  ASSERT_FALSE(img.ok());
  EXPECT_CONTAINS(img.error().message, "truncated BMP (54 bytes; the header's 1560281223x2147483647 pixels at 24 bits "
                                       "need 10052035239783431838)");
  // The frames after the first may be cut: only the first is read.
  write_file(dir / "first.gif", kTwoFrameGif.substr(0, kTwoFrameGif.size() - 8));
  EXPECT_TRUE(load_image(dir / "first.gif").ok());
}

// ---------------------------------------------------------------------------
// Resizing, cropping, preprocess

// Pillow's BILINEAR on a 4x4 -> 2x2 downscale (scale 2): the triangle's
// support widens from 1 to 2 input pixels. Output 0 is centred at input
// coordinate 1.0, taps x = 0, 1, 2 at distances (x + 0.5 - 1) / 2 =
// -0.25, 0.25, 0.75 -> weights 0.75, 0.75, 0.25 -> normalised 3/7, 3/7, 1/7.
// Output 1 (centre 3.0) takes x = 1, 2, 3 with 1/7, 3/7, 3/7. On the linear
// ramp v = 35x + 7y both passes land on integers:
//   x: 35 * (0*3 + 1*3 + 2*1) / 7 = 25,   35 * (1*1 + 2*3 + 3*3) / 7 = 80
//   y:  7 * 5/7 = 5,                       7 * 16/7 = 16
TEST(ResizeImage, BilinearDownscaleAveragesWithAntialiasing) {
  Tensor ramp = image_of(1, 4, 4, [](int, int y, int x) { return 35 * x + 7 * y; });
  Tensor out = resize_image(ramp, 2, 2, "bilinear");
  ASSERT_EQ(out.shape, (Dims{1, 2, 2}));
  EXPECT_EQ(plane(out, 0), (std::vector<float>{25 + 5, 80 + 5, 25 + 16, 80 + 16}));

  // Values between integers are rounded, as Pillow's 8-bit result is:
  // 10 * 5/7 = 7.14 -> 7 and 10 * 16/7 = 22.86 -> 23.
  Tensor row = image_of(1, 4, 4, [](int, int, int x) { return 10 * x; });
  EXPECT_EQ(plane(resize_image(row, 2, 2, "bilinear"), 0), (std::vector<float>{7, 23, 7, 23}));
}

// Outputs of Pillow 9.4's Image.resize on a 7x6 RGB image with
// v = (37x + 101y + 53c) mod 256, channel 0.
TEST(ResizeImage, MatchesPillow) {
  Tensor img = image_of(3, 6, 7, [](int c, int y, int x) { return (x * 37 + y * 101 + c * 53) % 256; });
  EXPECT_EQ(plane(resize_image(img, 4, 3, "bicubic"), 0),
            (std::vector<float>{60, 151, 155, 159, 122, 121, 120, 125, 120, 145, 86, 147}));
  EXPECT_EQ(plane(resize_image(img, 3, 5, "lanczos"), 0),
            (std::vector<float>{82, 103, 158, 152, 135, 147, 138, 103, 154, 95, 147, 121, 83, 117, 152}));
  EXPECT_EQ(plane(resize_image(img, 9, 10, "bilinear"), 0),
            (std::vector<float>{0,   20,  46,  72,  98,  124, 150, 176, 202, 222, 51,  71,  97,  123, 149,
                                175, 194, 131, 125, 145, 118, 138, 153, 149, 173, 199, 214, 91,  64,  84,
                                185, 205, 178, 55,  70,  96,  120, 116, 131, 151, 125, 145, 139, 75,  95,
                                121, 147, 173, 141, 91,  64,  84,  110, 136, 134, 145, 171, 197, 126, 30,
                                131, 151, 177, 203, 91,  42,  68,  94,  101, 97,  199, 149, 117, 143, 86,
                                67,  93,  119, 145, 165, 249, 129, 39,  65,  91,  117, 143, 169, 195, 215}));
}

TEST(ResizeImage, ConstantStaysConstantAndOvershootIsClamped) {
  Tensor flat = image_of(3, 5, 9, [](int c, int, int) { return 40 + 90 * c; });
  for (const char* f : {"nearest", "bilinear", "bicubic", "lanczos", "box", "hamming"}) {
    for (auto [h, w] : {std::pair{2, 3}, std::pair{11, 17}}) {
      Tensor out = resize_image(flat, h, w, f);
      ASSERT_EQ(out.shape, (Dims{3, h, w}));
      for (int c = 0; c < 3; ++c)
        for (float v : plane(out, c)) ASSERT_EQ(v, 40 + 90 * c) << f;
    }
  }
  // A hard edge upscaled with bicubic rings past 0 and 255; the 8-bit result clamps.
  Tensor edge = image_of(1, 1, 4, [](int, int, int x) { return x < 2 ? 0 : 255; });
  Tensor out = resize_image(edge, 1, 16, "bicubic");
  for (float v : plane(out, 0)) {
    EXPECT_GE(v, 0);
    EXPECT_LE(v, 255);
    EXPECT_EQ(v, std::floor(v));
  }
  EXPECT_EQ(plane(out, 0).front(), 0);
  EXPECT_EQ(plane(out, 0).back(), 255);
}

TEST(CenterCropImage, FloorsOddOffsetsAndPadsWithZeros) {
  Tensor img = image_of(1, 5, 4, [](int, int y, int x) { return 1 + 10 * y + x; });
  // (5 - 2) // 2 = 1 and (4 - 2) // 2 = 1.
  EXPECT_EQ(plane(center_crop_image(img, 2, 2), 0), (std::vector<float>{12, 13, 22, 23}));
  // Larger than the image: (5 - 6) // 2 = -1 and (4 - 5) // 2 = -1, so one
  // row and one column of zeros above and to the left.
  Tensor padded = center_crop_image(img, 6, 5);
  ASSERT_EQ(padded.shape, (Dims{1, 6, 5}));
  std::vector<float> p = plane(padded, 0);
  for (int x = 0; x < 5; ++x) EXPECT_EQ(p[x], 0);
  for (int y = 0; y < 6; ++y) EXPECT_EQ(p[y * 5], 0);
  EXPECT_EQ(p[1 * 5 + 1], 1);
  EXPECT_EQ(p[5 * 5 + 4], 44);
}

TEST(Preprocess, ConstantImageGivesConstantNormalizedValues) {
  ImagePreprocess p;
  p.shortest_edge = 4;
  p.resample = "bicubic";
  p.do_center_crop = true;
  p.crop_height = p.crop_width = 4;
  p.mean = {0.48145466f, 0.4578275f, 0.40821073f};
  p.std = {0.26862954f, 0.26130258f, 0.27577711f};
  const float value[3] = {200, 100, 30};
  Tensor img = image_of(3, 5, 7, [&](int c, int, int) { return value[c]; });
  Tensor out = preprocess(img, p);
  ASSERT_EQ(out.shape, (Dims{3, 4, 4}));
  for (int c = 0; c < 3; ++c) {
    const float want = (value[c] / 255.0f - p.mean[c]) / p.std[c];
    for (float v : plane(out, c)) EXPECT_FLOAT_EQ(v, want) << "channel " << c;
  }
}

TEST(Preprocess, ShortestEdgeKeepsTheAspectRatio) {
  ImagePreprocess p;
  p.shortest_edge = 5;
  p.do_rescale = p.do_normalize = false;
  EXPECT_EQ(preprocess(Tensor::zeros(DType::F32, {3, 10, 20}), p).shape, (Dims{3, 5, 10}));
  EXPECT_EQ(preprocess(Tensor::zeros(DType::F32, {3, 20, 10}), p).shape, (Dims{3, 10, 5}));
  // int(2 * 7 / 3) = int(4.67) = 4
  p.shortest_edge = 2;
  EXPECT_EQ(preprocess(Tensor::zeros(DType::F32, {3, 3, 7}), p).shape, (Dims{3, 2, 4}));
}

TEST(Preprocess, ConvNextCropPct) {
  ImagePreprocess p;
  p.shortest_edge = 8;
  p.crop_pct = 0.5;  // shortest edge to int(8 / 0.5) = 16: 20x30 -> 16x24, then crop 8x8
  p.do_rescale = p.do_normalize = false;
  Tensor img = image_of(3, 20, 30, [](int, int y, int x) { return y * 30 + x < 256 ? 7 : 9; });
  EXPECT_EQ(preprocess(img, p).shape, (Dims{3, 8, 8}));
  Tensor flat = image_of(3, 20, 30, [](int, int, int) { return 50; });
  for (float v : plane(preprocess(flat, p), 1)) EXPECT_EQ(v, 50);
  p.shortest_edge = 384;  // 384 and up: warp to a square, no crop
  EXPECT_EQ(preprocess(Tensor::zeros(DType::F32, {3, 10, 12}), p).shape, (Dims{3, 384, 384}));
}

TEST(Preprocess, StepsCanBeTurnedOff) {
  ImagePreprocess p;
  p.do_resize = p.do_rescale = p.do_normalize = false;
  Tensor img = image_of(3, 2, 3, [](int c, int y, int x) { return c * 100 + y * 10 + x + 0.25; });
  Tensor out = preprocess(img, p);
  ASSERT_EQ(out.shape, img.shape);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(plane(out, c), plane(img, c));
  EXPECT_NE(out.data, img.data) << "a fresh tensor, not the caller's";

  p.do_rescale = true;
  p.rescale_factor = 0.5;
  EXPECT_EQ(plane(preprocess(img, p), 2)[0], 100.125f);
}

TEST(Preprocess, RejectsBadArguments) {
  ImagePreprocess p;
  EXPECT_THROW(preprocess(Tensor::zeros(DType::F32, {1, 4, 4}), p), std::invalid_argument);
  EXPECT_THROW(preprocess(Tensor::zeros(DType::F32, {4, 4}), p), std::invalid_argument);
  p.resample = "sinc";
  EXPECT_NE(preprocess_problem(p), "");
  EXPECT_THROW(preprocess(Tensor::zeros(DType::F32, {3, 4, 4}), p), std::invalid_argument);
}

// ---------------------------------------------------------------------------
// read_preprocessor_config

Result<ImagePreprocess> read_with(const TempDir& dir, const json& preprocessor, const json& model = json::object()) {
  write_file(dir / "preprocessor_config.json", preprocessor.dump(2));
  return read_preprocessor_config(dir.path(), model);
}

TEST(PreprocessorConfig, ReadsAViTStyleFile) {
  TempDir dir;
  auto p = read_with(dir, {{"do_normalize", true},
                           {"do_rescale", true},
                           {"do_resize", true},
                           {"image_mean", {0.5, 0.5, 0.5}},
                           {"image_processor_type", "ViTImageProcessor"},
                           {"image_std", {0.5, 0.5, 0.5}},
                           {"resample", 2},
                           {"rescale_factor", 0.00392156862745098},
                           {"size", {{"height", 32}, {"width", 48}}}});
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_TRUE(p->do_resize);
  EXPECT_EQ(p->shortest_edge, 0);
  EXPECT_EQ(p->height, 32);
  EXPECT_EQ(p->width, 48);
  EXPECT_EQ(p->resample, "bilinear");
  EXPECT_FALSE(p->do_center_crop);
  EXPECT_EQ(p->crop_pct, 0);
  EXPECT_EQ(p->rescale_factor, 1.0 / 255);
  EXPECT_EQ(p->mean, (std::vector<float>{0.5f, 0.5f, 0.5f}));
  EXPECT_EQ(p->std, (std::vector<float>{0.5f, 0.5f, 0.5f}));

  auto crop = read_with(dir, {{"image_processor_type", "ViTImageProcessor"}, {"do_center_crop", true}});
  ASSERT_TRUE(crop.ok()) << crop.error().message;
  EXPECT_FALSE(crop->do_center_crop) << "ViTImageProcessor has no center crop";
  EXPECT_EQ(crop->height, 224) << "the class default";
}

TEST(PreprocessorConfig, LegacyFilesWithPlainNumberSizes) {
  TempDir dir;
  // google/vit-base-patch16-224: a number is height = width for ViT.
  auto vit = read_with(dir, {{"feature_extractor_type", "ViTFeatureExtractor"}, {"size", 224}, {"resample", 2},
                             {"image_mean", {0.5, 0.5, 0.5}}, {"image_std", {0.5, 0.5, 0.5}}});
  ASSERT_TRUE(vit.ok()) << vit.error().message;
  EXPECT_EQ(vit->shortest_edge, 0);
  EXPECT_EQ(vit->height, 224);
  EXPECT_EQ(vit->width, 224);

  // openai/clip-vit-base-patch32: the shortest edge for CLIP; crop_size square.
  auto clip = read_with(dir, {{"feature_extractor_type", "CLIPFeatureExtractor"}, {"size", 224},
                              {"crop_size", 224}, {"do_center_crop", true}, {"resample", 3}});
  ASSERT_TRUE(clip.ok()) << clip.error().message;
  EXPECT_EQ(clip->shortest_edge, 224);
  EXPECT_TRUE(clip->do_center_crop);
  EXPECT_EQ(clip->crop_height, 224);
  EXPECT_EQ(clip->crop_width, 224);
  EXPECT_EQ(clip->resample, "bicubic");
  EXPECT_FLOAT_EQ(clip->mean[0], 0.48145466f) << "CLIPImageProcessor's default";

  // microsoft/resnet-50
  auto resnet = read_with(dir, {{"feature_extractor_type", "ConvNextFeatureExtractor"}, {"crop_pct", 0.875},
                                {"size", 224}, {"resample", 3}, {"do_normalize", true},
                                {"image_mean", {0.485, 0.456, 0.406}}, {"image_std", {0.229, 0.224, 0.225}}});
  ASSERT_TRUE(resnet.ok()) << resnet.error().message;
  EXPECT_EQ(resnet->shortest_edge, 224);
  EXPECT_EQ(resnet->crop_pct, 0.875);
  EXPECT_FALSE(resnet->do_center_crop);
  EXPECT_TRUE(resnet->do_rescale);
  EXPECT_FLOAT_EQ(resnet->std[2], 0.225f);
}

TEST(PreprocessorConfig, MissingKeysTakeTheClassDefaults) {
  TempDir dir;
  auto convnext = read_with(dir, {{"image_processor_type", "ConvNextImageProcessor"}});
  ASSERT_TRUE(convnext.ok()) << convnext.error().message;
  EXPECT_EQ(convnext->shortest_edge, 384);
  EXPECT_EQ(convnext->crop_pct, 224.0 / 256);
  EXPECT_EQ(convnext->resample, "bilinear");
  EXPECT_EQ(convnext->mean, (std::vector<float>{0.5f, 0.5f, 0.5f}));

  // No class named: the model_type's.
  auto clip = read_with(dir, {{"size", {{"shortest_edge", 336}}}, {"crop_size", {{"height", 336}, {"width", 336}}}},
                        {{"model_type", "clip_vision_model"}});
  ASSERT_TRUE(clip.ok()) << clip.error().message;
  EXPECT_EQ(clip->shortest_edge, 336);
  EXPECT_TRUE(clip->do_center_crop);
  EXPECT_EQ(clip->crop_height, 336);

  // Another class: what it uses must be there.
  auto deit = read_with(dir, {{"image_processor_type", "DeiTImageProcessor"}, {"size", {{"height", 256}, {"width", 256}}},
                              {"resample", 3}, {"do_center_crop", true}, {"crop_size", {{"height", 224}, {"width", 224}}},
                              {"image_mean", {0.485, 0.456, 0.406}}, {"image_std", {0.229, 0.224, 0.225}}});
  ASSERT_TRUE(deit.ok()) << deit.error().message;
  EXPECT_EQ(deit->height, 256);
  EXPECT_EQ(deit->crop_height, 224);
  auto partial = read_with(dir, {{"image_processor_type", "BeitImageProcessor"}, {"size", 256}, {"resample", 3}});
  ASSERT_FALSE(partial.ok());
  EXPECT_CONTAINS(partial.error().message, "'image_mean' is missing");
  EXPECT_CONTAINS(partial.error().message, "BeitImageProcessor");
  // DeiT's class is known: what a file leaves out is its default.
  auto deit_partial = read_with(dir, {{"image_processor_type", "DeiTImageProcessor"}, {"size", 288}});
  ASSERT_TRUE(deit_partial.ok()) << deit_partial.error().message;
  EXPECT_EQ(deit_partial->height, 288);
  EXPECT_EQ(deit_partial->crop_height, 224);
  EXPECT_EQ(deit_partial->resample, "bicubic");
  EXPECT_EQ(deit_partial->mean, (std::vector<float>{0.5f, 0.5f, 0.5f}));
}

TEST(PreprocessorConfig, DefaultsFromTheModelConfigWithoutAFile) {
  TempDir dir;
  auto vit = read_preprocessor_config(dir.path(), {{"model_type", "vit"}, {"image_size", 32}});
  ASSERT_TRUE(vit.ok()) << vit.error().message;
  EXPECT_EQ(vit->shortest_edge, 0);
  EXPECT_EQ(vit->height, 32);
  EXPECT_EQ(vit->width, 32);
  EXPECT_EQ(vit->resample, "bilinear");
  EXPECT_FALSE(vit->do_center_crop);
  EXPECT_EQ(vit->mean, (std::vector<float>{0.5f, 0.5f, 0.5f}));

  auto clip = read_preprocessor_config(dir.path(), {{"model_type", "clip_vision_model"}, {"image_size", 32}});
  ASSERT_TRUE(clip.ok()) << clip.error().message;
  EXPECT_EQ(clip->shortest_edge, 32);
  EXPECT_TRUE(clip->do_center_crop);
  EXPECT_EQ(clip->crop_width, 32);
  EXPECT_EQ(clip->resample, "bicubic");
  EXPECT_EQ(clip->std, (std::vector<float>{0.26862954f, 0.26130258f, 0.27577711f}));

  // DeiT: resized as 256 is to 224, then cropped to the model's size.
  auto deit = read_preprocessor_config(dir.path(), {{"model_type", "deit"}, {"image_size", 224}});
  ASSERT_TRUE(deit.ok()) << deit.error().message;
  EXPECT_EQ(deit->height, 256);
  EXPECT_TRUE(deit->do_center_crop);
  EXPECT_EQ(deit->crop_width, 224);
  EXPECT_EQ(deit->resample, "bicubic");
  EXPECT_EQ(preprocess(Tensor::zeros(DType::F32, {3, 300, 400}), *deit).shape, (Dims{3, 224, 224}));

  auto full_clip = read_preprocessor_config(dir.path(), {{"model_type", "clip"}, {"vision_config", {{"image_size", 336}}}});
  ASSERT_TRUE(full_clip.ok()) << full_clip.error().message;
  EXPECT_EQ(full_clip->shortest_edge, 336);

  auto resnet = read_preprocessor_config(dir.path(), {{"model_type", "resnet"}});
  ASSERT_TRUE(resnet.ok()) << resnet.error().message;
  EXPECT_EQ(resnet->shortest_edge, 224);
  EXPECT_EQ(resnet->crop_pct, 0.875);
  EXPECT_EQ(resnet->mean, (std::vector<float>{0.485f, 0.456f, 0.406f}));
  EXPECT_EQ(resnet->std, (std::vector<float>{0.229f, 0.224f, 0.225f}));
  EXPECT_EQ(preprocess(Tensor::zeros(DType::F32, {3, 300, 400}), *resnet).shape, (Dims{3, 224, 224}));

  auto unknown = read_preprocessor_config(dir.path(), {{"model_type", "llama"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_CONTAINS(unknown.error().message, dir.path());
  EXPECT_CONTAINS(unknown.error().message, "no preprocessor_config.json");
  EXPECT_CONTAINS(unknown.error().message, "'llama'");
}

TEST(PreprocessorConfig, ErrorsNameTheFileAndTheKey) {
  TempDir dir;
  const std::string file = dir / "preprocessor_config.json";
  const json vit = {{"image_processor_type", "ViTImageProcessor"}};
  const struct {
    json patch;
    const char* message;
  } cases[] = {
      {{{"resample", 7}}, "'resample' must be a PIL filter code"},
      {{{"size", {{"longest_edge", 1333}}}}, "'size' with a longest_edge is not supported"},
      {{{"size", {{"shortest_edge", 224}}}}, "'size' must give height and width"},  // ViT resizes to a box
      {{{"size", "224"}}, "'size' must be a number"},
      {{{"size", 0}}, "'size' must be between 1 and 16384"},
      {{{"image_std", {0.5, 0.0, 0.5}}}, "'image_std' has a zero"},
      {{{"image_mean", {0.5, 0.5}}}, "'image_mean' must be a number or a list of 1 or 3 numbers"},
      {{{"do_resize", "yes"}}, "'do_resize' must be true or false"},
      {{{"rescale_factor", -1}}, "'rescale_factor' must be a positive number"},
      {{{"do_flip_channel_order", true}}, "'do_flip_channel_order' is true"},
  };
  for (const auto& c : cases) {
    json j = vit;
    j.update(c.patch);
    auto p = read_with(dir, j);
    ASSERT_FALSE(p.ok()) << c.patch.dump();
    EXPECT_CONTAINS(p.error().message, file);
    EXPECT_CONTAINS(p.error().message, c.message);
  }
  auto poolformer = read_with(dir, {{"image_processor_type", "PoolFormerImageProcessor"}, {"size", {{"shortest_edge", 224}}},
                                    {"crop_pct", 0.9}, {"do_center_crop", true}, {"crop_size", 224}, {"resample", 3},
                                    {"image_mean", 0.5}, {"image_std", 0.5}});
  ASSERT_FALSE(poolformer.ok());
  EXPECT_CONTAINS(poolformer.error().message, "'crop_pct' together with do_center_crop");

  write_file(file, "{\"size\": 224,");
  auto broken = read_preprocessor_config(dir.path(), {{"model_type", "vit"}});
  ASSERT_FALSE(broken.ok());
  EXPECT_CONTAINS(broken.error().message, file);
  EXPECT_CONTAINS(broken.error().message, "invalid JSON");
}

}  // namespace
}  // namespace arch

// Block-scaled FP8 matrices both ways: the values a file's codes and block
// scales mean (every element, blocks cut at the bottom and right edges),
// the blocks quantized as DeepSeek-V3's are (max|block| / 448, nearest
// code), and each refusal named.
#include "importer/checkpoint/fp8_blocks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/core/fp8.h"
#include "tests/test_files.h"

namespace arch {
namespace {

// An e4m3fn code's value from the format's definition (bias 7, 3 mantissa
// bits, exponent bits 0 subnormal), apart from the code under test.
float e4m3(uint8_t code) {
  const int e = (code >> 3) & 0xf, m = code & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - 7) : std::ldexp(1.0 + m / 8.0, e - 7);
  return float((code & 0x80) ? -mag : mag);
}

// Codes that are numbers, varied: every magnitude 0..126, both signs.
Tensor codes(Dims shape) {
  Tensor t = Tensor::zeros(DType::F8_E4M3, std::move(shape));
  auto* c = static_cast<uint8_t*>(t.data);
  for (int64_t i = 0; i < t.numel(); ++i) c[i] = uint8_t((i * 37) % 127) | (i % 2 ? 0x80 : 0);
  return t;
}

// Distinct scales, one per block: 0.5, 0.75, 1, ...
Tensor scales(Dims shape) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = 0.5f + 0.25f * float(i);
  return t;
}

uint8_t code_at(const Tensor& t, int64_t i) { return static_cast<const uint8_t*>(t.data)[i]; }

Result<Tensor> dequantize(const Tensor& x, const Tensor* s, Fp8Blocks b, DType to = DType::F32) {
  return dequantize_fp8(x, s, b, to, "m.safetensors: tensor 'w'", "m.safetensors: tensor 'w_scale_inv'");
}

TEST(Fp8Blocks, TheBlockSizeIsTheConfigsOr128) {
  auto none = fp8_block_size(nlohmann::json::object(), "c.json");
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->rows, 128);
  EXPECT_EQ(none->cols, 128);
  auto deepseek = fp8_block_size(nlohmann::json::parse(R"({"quantization_config": {"quant_method": "fp8",
      "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}})"), "c.json");
  ASSERT_TRUE(deepseek.ok());
  EXPECT_EQ(deepseek->rows, 128);
  auto given = fp8_block_size(nlohmann::json::parse(R"({"quantization_config": {"weight_block_size": [64, 32]}})"), "c.json");
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->rows, 64);
  EXPECT_EQ(given->cols, 32);
  auto unsized = fp8_block_size(nlohmann::json::parse(R"({"quantization_config": {"quant_method": "fp8"}})"), "c.json");
  ASSERT_TRUE(unsized.ok());
  EXPECT_EQ(unsized->cols, 128);
  for (const char* bad : {"[0, 128]", "[128]", "\"128\"", "[-1, 2]", "[1.5, 2]", "[128, 128, 1]", "[4294967296, 1]"}) {
    auto r = fp8_block_size(nlohmann::json::parse(std::string(R"({"quantization_config": {"weight_block_size": )") + bad + "}}"),
                            "ckpt: config.json");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_CONTAINS(r.error().message, "ckpt: config.json: quantization_config.weight_block_size ");
    EXPECT_CONTAINS(r.error().message, "must be two positive integers [rows, cols]");
  }
  auto odd = fp8_block_size(nlohmann::json::parse(R"({"quantization_config": 3})"), "c.json");
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().message, "c.json: quantization_config is integer, expected an object");
}

TEST(Fp8Blocks, ScalesHaveOneEntryPerBlockPartialOnesIncluded) {
  EXPECT_EQ(fp8_scale_shape({130, 200}, {}), (Dims{2, 2}));
  EXPECT_EQ(fp8_scale_shape({128, 128}, {}), (Dims{1, 1}));
  EXPECT_EQ(fp8_scale_shape({7168, 18432}, {}), (Dims{56, 144}));  // DeepSeek-V3's gate_proj
  EXPECT_EQ(fp8_scale_shape({3, 256, 129}, {}), (Dims{3, 2, 2}));
  EXPECT_EQ(fp8_scale_shape({7, 11}, {3, 4}), (Dims{3, 3}));
  EXPECT_EQ(fp8_scale_shape({0, 5}, {}), (Dims{0, 1}));
}

// Every element of a 7 x 11 matrix in 3 x 4 blocks (a last row of blocks
// one row high, a last column three wide): its code's value times its
// block's scale.
TEST(Fp8Blocks, EachElementTakesItsBlocksScale) {
  const Fp8Blocks b{3, 4};
  Tensor x = codes({7, 11}), s = scales({3, 3});
  auto w = dequantize(x, &s, b);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->dtype, DType::F32);
  ASSERT_EQ(w->shape, (Dims{7, 11}));
  for (int64_t r = 0; r < 7; ++r)
    for (int64_t c = 0; c < 11; ++c)
      EXPECT_EQ(w->f32()[r * 11 + c], e4m3(code_at(x, r * 11 + c)) * s.f32()[(r / 3) * 3 + c / 4]) << r << "," << c;
  // The corner block [2, 2] is one row by three columns: scale 0.5 + 0.25 * 8.
  EXPECT_EQ(w->f32()[6 * 11 + 10], e4m3(code_at(x, 76)) * 2.5f);
}

// 128 x 128 blocks over 130 x 200: the edges of each block, on both sides.
TEST(Fp8Blocks, DefaultBlocksCutAtTheEdges) {
  Tensor x = codes({130, 200}), s = scales({2, 2});
  auto w = dequantize(x, &s, {});
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (int64_t r : {0, 127, 128, 129})
    for (int64_t c : {0, 127, 128, 199}) {
      const float scale = s.f32()[(r / 128) * 2 + c / 128];
      EXPECT_EQ(w->f32()[r * 200 + c], e4m3(code_at(x, r * 200 + c)) * scale) << r << "," << c;
    }
}

// Leading dims are matrices of their own, each with its own scales.
TEST(Fp8Blocks, StackedMatricesEachHaveTheirScales) {
  Tensor x = codes({2, 5, 6}), s = scales({2, 2, 2});
  auto w = dequantize(x, &s, {4, 4});
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t r = 0; r < 5; ++r)
      for (int64_t c = 0; c < 6; ++c) {
        const int64_t i = (n * 5 + r) * 6 + c;
        EXPECT_EQ(w->f32()[i], e4m3(code_at(x, i)) * s.f32()[(n * 2 + r / 4) * 2 + c / 4]);
      }
}

TEST(Fp8Blocks, BF16ScalesAndABF16Result) {
  Tensor x = codes({5, 6}), s = Tensor::zeros(DType::BF16, {2, 2});
  const float sv[] = {0.5f, 2.f, 0.125f, 3.f};
  for (int i = 0; i < 4; ++i) static_cast<uint16_t*>(s.data)[i] = f32_to_bf16(sv[i]);
  auto w = dequantize(x, &s, {4, 4}, DType::BF16);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(w->dtype, DType::BF16);
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 6; ++c)
      EXPECT_EQ(static_cast<const uint16_t*>(w->data)[r * 6 + c],
                f32_to_bf16(e4m3(code_at(x, r * 6 + c)) * sv[(r / 4) * 2 + c / 4]));
}

// E5M2 means itself without scales, and is scaled as E4M3 is with them.
TEST(Fp8Blocks, E5m2WithOrWithoutScales) {
  std::vector<uint8_t> c = {0x3c, 0xc0, 0x01, 0x7b};  // 1, -2, 2^-16, 57344
  Tensor x = Tensor::view(DType::F8_E5M2, {2, 2}, c.data(), nullptr);
  auto plain = dequantize(x, nullptr, {});
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_EQ(std::vector<float>(plain->f32(), plain->f32() + 4),
            (std::vector<float>{1.f, -2.f, std::ldexp(1.f, -16), 57344.f}));
  Tensor s = scales({1, 1});
  auto scaled = dequantize(x, &s, {});
  ASSERT_TRUE(scaled.ok()) << scaled.error().message;
  EXPECT_EQ(scaled->f32()[1], -1.f);
  Tensor v = Tensor::view(DType::F8_E5M2, {4}, c.data(), nullptr);  // any shape without scales
  EXPECT_TRUE(dequantize(v, nullptr, {}).ok());
}

TEST(Fp8Blocks, RefusalsNameTheTensor) {
  Tensor x = codes({130, 200}), s = scales({2, 2});
  auto missing = dequantize_fp8(x, nullptr, {}, DType::F32, "m.safetensors: tensor 'w'", "tensor 'w_scale_inv' beside it");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "m.safetensors: tensor 'w' is F8_E4M3[130, 200], whose codes mean nothing without their block scales, "
            "but there is no tensor 'w_scale_inv' beside it");

  Tensor small = scales({1, 2});
  auto shape = dequantize(x, &small, {});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.error().message,
            "m.safetensors: tensor 'w_scale_inv' has shape [1, 2], but the F8_E4M3[130, 200] it scales, in blocks "
            "of 128 x 128, needs [2, 2]");
  Tensor transposed = scales({2, 1});
  auto blocks = dequantize(x, &transposed, {128, 256});
  ASSERT_TRUE(blocks.ok());  // [2, 1] is right for 128 x 256 blocks
  EXPECT_FALSE(dequantize(x, &transposed, {}).ok());

  Tensor ints = Tensor::zeros(DType::I32, {2, 2});
  auto type = dequantize(x, &ints, {});
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.error().message, "m.safetensors: tensor 'w_scale_inv' is I32[2, 2]; block scales must be F32, BF16 or F16");

  for (float bad : {INFINITY, -INFINITY, NAN}) {
    Tensor t = scales({2, 2});
    t.f32()[2] = bad;
    auto r = dequantize(x, &t, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message, "m.safetensors: tensor 'w_scale_inv' holds " +
                                     std::string(std::isnan(bad) ? "NaN" : bad < 0 ? "-inf" : "inf") +
                                     " at block [1, 0] of [2, 2]: a block scale must be a finite number");
  }

  for (uint8_t nan : {uint8_t(0x7f), uint8_t(0xff)}) {
    Tensor y = codes({130, 200});
    static_cast<uint8_t*>(y.data)[129 * 200 + 3] = nan;
    auto r = dequantize(y, &s, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message,
              "m.safetensors: tensor 'w' holds NaN at index 25803 (element [129, 3] of [130, 200]; 1 of 26000 values are NaN or Inf): FP8 "
              "weights must be all numbers");
  }
  std::vector<uint8_t> e5 = {0x3c, 0x7c};  // 1, Inf
  auto inf = dequantize(Tensor::view(DType::F8_E5M2, {1, 2}, e5.data(), nullptr), nullptr, {});
  ASSERT_FALSE(inf.ok());
  EXPECT_CONTAINS(inf.error().message, "tensor 'w' holds inf at index 1 (element [0, 1] of [1, 2]");

  Tensor vec = codes({4}), one = scales({1});
  auto flat = dequantize(vec, &one, {});
  ASSERT_FALSE(flat.ok());
  EXPECT_EQ(flat.error().message,
            "m.safetensors: tensor 'w' is F8_E4M3[4], but block scales (m.safetensors: tensor 'w_scale_inv') are "
            "for matrices");

  Tensor big = Tensor::zeros(DType::F8_E4M3, {1, 2});
  static_cast<uint8_t*>(big.data)[1] = 0x7e;  // 448
  Tensor huge = scales({1, 1});
  huge.f32()[0] = 1e38f;
  auto over = dequantize(big, &huge, {});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().message,
            "m.safetensors: tensor 'w': element [0, 1] (448 times its block scale 1e+38) is past the range of F32");

  Tensor f32 = scales({2, 2});
  EXPECT_CONTAINS(dequantize(f32, &s, {}).error().message, "tensor 'w' is F32[2, 2], not an FP8 type");
}

// Each block's scale is max|block| / 448 (its largest value becomes +-448,
// code 0x7e), and each value the code nearest it: no other code, times the
// scale, comes closer.
TEST(Fp8Blocks, QuantizingTakesEachBlocksMaximumAndTheNearestCode) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  Tensor x = Tensor::zeros(DType::F32, {130, 200});
  for (int64_t r = 0; r < 130; ++r)
    for (int64_t c = 0; c < 200; ++c)  // blocks of different magnitudes
      x.f32()[r * 200 + c] = normal(rng) * (r < 128 ? 1.f : 40.f) * (c < 128 ? 1.f : 0.01f);
  auto q = quantize_fp8(x, {}, "x");
  ASSERT_TRUE(q.ok()) << q.error().message;
  ASSERT_EQ(q->values.dtype, DType::F8_E4M3);
  ASSERT_EQ(q->scale_inv.dtype, DType::F32);
  ASSERT_EQ(q->scale_inv.shape, (Dims{2, 2}));
  for (int64_t br = 0; br < 2; ++br)
    for (int64_t bc = 0; bc < 2; ++bc) {
      float amax = 0;
      int64_t at = 0;
      for (int64_t r = br * 128; r < std::min<int64_t>(130, br * 128 + 128); ++r)
        for (int64_t c = bc * 128; c < std::min<int64_t>(200, bc * 128 + 128); ++c)
          if (std::fabs(x.f32()[r * 200 + c]) > amax) amax = std::fabs(x.f32()[r * 200 + c]), at = r * 200 + c;
      EXPECT_EQ(q->scale_inv.f32()[br * 2 + bc], amax / 448.f);
      EXPECT_EQ(code_at(q->values, at) & 0x7f, 0x7e);
    }
  for (int64_t r = 0; r < 130; ++r)
    for (int64_t c = 0; c < 200; ++c) {
      const int64_t i = r * 200 + c;
      const double v = x.f32()[i] / q->scale_inv.f32()[(r / 128) * 2 + c / 128];  // in float, as quantized
      const double err = std::fabs(e4m3(code_at(q->values, i)) - v);
      for (int other = 0; other < 256; ++other)
        if ((other & 0x7f) != 0x7f) {
          ASSERT_LE(err, std::fabs(e4m3(uint8_t(other)) - v) + 1e-12) << r << "," << c;
        }
      // Relative error within half a step: 2^-4 among normals.
      if (std::fabs(v) >= 0.015625) {
        ASSERT_LE(err, std::fabs(v) / 16 + 1e-12);
      }
    }
}

// A value halfway between two codes takes the even one: in a block whose
// largest value is 448 (scale 1), 1 + 1/16 lies between 1 (code 0x38) and
// 1.125 (0x39), 1 + 3/16 between 1.125 and 1.25 (0x3a).
TEST(Fp8Blocks, QuantizingTiesGoToEven) {
  std::vector<float> v = {448.f, 1.0625f, 1.1875f, -1.0625f};
  auto q = quantize_fp8(Tensor::view(DType::F32, {2, 2}, v.data(), nullptr), {}, "x");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->scale_inv.f32()[0], 1.f);
  EXPECT_EQ(code_at(q->values, 0), 0x7e);
  EXPECT_EQ(code_at(q->values, 1), 0x38);
  EXPECT_EQ(code_at(q->values, 2), 0x3a);
  EXPECT_EQ(code_at(q->values, 3), 0xb8);
}

TEST(Fp8Blocks, AnAllZeroBlockHasScaleZeroAndReadsBackAsZeros) {
  Tensor x = Tensor::zeros(DType::F32, {3, 5});
  x.f32()[4] = 2.f;  // the second block of columns (4 wide) holds one value
  auto q = quantize_fp8(x, {4, 4}, "x");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->scale_inv.f32()[0], 0.f);
  EXPECT_EQ(q->scale_inv.f32()[1], 2.f / 448.f);
  auto back = dequantize(q->values, &q->scale_inv, {4, 4});
  ASSERT_TRUE(back.ok()) << back.error().message;
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(back->f32()[i], x.f32()[i]) << i;  // 2 = 448 * (2 / 448) exactly
}

TEST(Fp8Blocks, QuantizingRefusesWhatIsNoMatrixOfNumbers) {
  Tensor x = Tensor::zeros(DType::F32, {2, 3});
  x.f32()[4] = NAN;
  EXPECT_EQ(quantize_fp8(x, {}, "m: tensor 'w'").error().message,
            "m: tensor 'w' holds NaN at index 4 (element [1, 1] of [2, 3]; 1 of 6 values are NaN or Inf): only numbers quantize");
  EXPECT_EQ(quantize_fp8(Tensor::zeros(DType::F32, {4}), {}, "w").error().message,
            "w is F32[4], but FP8 blocks are for matrices");
  EXPECT_EQ(quantize_fp8(Tensor::zeros(DType::I64, {2, 2}), {}, "w").error().message,
            "w is I64[2, 2]; only float matrices (F32, F16, BF16) quantize to FP8");
}

}  // namespace
}  // namespace arch

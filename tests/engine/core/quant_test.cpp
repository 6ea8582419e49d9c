// The block formats: round trips within a quantization step, the
// layout (offset binary, q4's nibble order, scales after the values), and
// the sizes a row takes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "engine/core/quant.h"
#include "engine/core/tensor.h"

namespace arch {
namespace {

TEST(Quant, RowSizesAndWhatCanBeQuantized) {
  EXPECT_EQ(quant_row_bytes(DType::Q8_0, 64), 64u + 2 * 2);
  EXPECT_EQ(quant_row_bytes(DType::Q4_0, 128), 64u + 4 * 2);
  EXPECT_TRUE(quantizable(DType::Q8_0, 96));
  EXPECT_FALSE(quantizable(DType::Q4_0, 96));  // q4 packs 64 values per 32 bytes
  EXPECT_FALSE(quantizable(DType::Q8_0, 172));
  Tensor t = Tensor::zeros(DType::Q4_0, {3, 128});
  EXPECT_EQ(t.nbytes(), 3 * quant_row_bytes(DType::Q4_0, 128));
}

TEST(Quant, RoundTripsWithinHalfAStep) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  const int64_t K = 256;
  std::vector<float> x(K), back(K);
  for (auto& v : x) v = dist(rng);
  for (DType t : {DType::Q8_0, DType::Q4_0}) {
    std::vector<uint8_t> row(quant_row_bytes(t, K));
    quantize_row(t, x.data(), K, row.data());
    dequantize_row(t, row.data(), K, back.data());
    for (int64_t b = 0; b < K / kQuantBlock; ++b) {
      float amax = 0;
      for (int64_t i = b * kQuantBlock; i < (b + 1) * kQuantBlock; ++i) amax = std::max(amax, std::abs(x[size_t(i)]));
      // Half a step, plus the F16 rounding of the scale; q4's levels run
      // -8..7, so the side opposite the extreme clamps at 7: up to a step.
      const float step = t == DType::Q8_0 ? amax / 127 : amax / 8;
      const float allowed = (t == DType::Q8_0 ? 0.5f : 1.0f) * step + 2e-3f * amax;
      for (int64_t i = b * kQuantBlock; i < (b + 1) * kQuantBlock; ++i)
        EXPECT_LE(std::abs(back[size_t(i)] - x[size_t(i)]), allowed) << dtype_name(t) << " " << i;
    }
  }
}

TEST(Quant, LayoutIsOffsetBinaryWithNibblesHalfAGroupApart) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[size_t(i)] = float(i % 32 == 0 ? -8 : (i < 32 ? 1 : 2));
  std::vector<uint8_t> q8(quant_row_bytes(DType::Q8_0, 64)), q4(quant_row_bytes(DType::Q4_0, 64));
  quantize_row(DType::Q8_0, x.data(), 64, q8.data());
  EXPECT_EQ(q8[0], 128 - 127);  // the block's extreme -8 -> -127
  EXPECT_EQ(f16_to_f32(uint16_t(q8[64] | q8[65] << 8)), f16_to_f32(f32_to_f16(8.0f / 127)));
  quantize_row(DType::Q4_0, x.data(), 64, q4.data());
  // Scale -8 / -8 = 1: value v is stored as v + 8; byte i holds value i and value i + 32.
  EXPECT_EQ(q4[0], uint8_t((0) | (0 << 4)));       // -8 and -8
  EXPECT_EQ(q4[1], uint8_t((1 + 8) | ((2 + 8) << 4)));
  EXPECT_EQ(f16_to_f32(uint16_t(q4[32] | q4[33] << 8)), 1.0f);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// convert_to: the one conversion import, the benchmarks and the tests use.
TEST(Quant, ConvertToStoresRowsAndRoundsHalves) {
  Tensor f = Tensor::zeros(DType::F32, {2, 64});
  for (int64_t i = 0; i < f.numel(); ++i) f.f32()[i] = float(i % 13) - 6.5f;
  Tensor q = convert_to(f, DType::Q8_0);
  EXPECT_EQ(q.dtype, DType::Q8_0);
  EXPECT_EQ(q.shape, f.shape);
  std::vector<uint8_t> row(quant_row_bytes(DType::Q8_0, 64));
  quantize_row(DType::Q8_0, f.f32() + 64, 64, row.data());
  EXPECT_EQ(std::memcmp(static_cast<uint8_t*>(q.data) + row.size(), row.data(), row.size()), 0);
  Tensor b = convert_to(f, DType::BF16);
  EXPECT_EQ(static_cast<uint16_t*>(b.data)[3], f32_to_bf16(f.f32()[3]));
  Tensor back = convert_to(b, DType::F32);
  EXPECT_EQ(back.f32()[5], f.f32()[5]);  // small integers and halves are exact in bf16
  EXPECT_EQ(convert_to(f, DType::F32).data, f.data);  // already F32: the same tensor
}

}  // namespace
}  // namespace arch

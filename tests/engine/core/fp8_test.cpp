// The 8-bit floats against their definition, written out here apart from
// the code under test: e4m3fn (bias 7, 3 mantissa bits, no infinities,
// S.1111.111 NaN) and e5m2 (bias 15, 2 mantissa bits, IEEE-like), every one
// of the 256 codes of each; and rounding to e4m3fn, nearest with ties to
// even.
#include "engine/core/fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "engine/core/tensor.h"

namespace arch {
namespace {

// The value a code means: sign, exponent bits e, mantissa bits m; e = 0 is
// subnormal, 0.m x 2^(1 - bias); else 1.m x 2^(e - bias).
double by_definition(int code, int exp_bits, int mant_bits) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const int e = (code >> mant_bits) & ((1 << exp_bits) - 1), m = code & ((1 << mant_bits) - 1);
  const double frac = double(m) / double(1 << mant_bits);
  const double mag = e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, e - bias);
  return (code & 0x80) ? -mag : mag;
}

TEST(Fp8, EveryE4m3CodeIsItsDefinition) {
  for (int code = 0; code < 256; ++code) {
    SCOPED_TRACE(code);
    const float got = f8e4m3_to_f32(uint8_t(code));
    if ((code & 0x7f) == 0x7f) {  // S.1111.111: NaN, the only codes that are not numbers
      EXPECT_TRUE(std::isnan(got));
      EXPECT_TRUE(f8e4m3_non_finite(uint8_t(code)));
      continue;
    }
    EXPECT_FALSE(f8e4m3_non_finite(uint8_t(code)));
    EXPECT_EQ(double(got), by_definition(code, 4, 3));
    EXPECT_EQ(std::signbit(got), (code & 0x80) != 0);  // -0 stays negative
  }
  // Landmarks: the largest, the smallest normal and subnormal, one.
  EXPECT_EQ(f8e4m3_to_f32(0x7e), 448.f);
  EXPECT_EQ(f8e4m3_to_f32(0xfe), -448.f);
  EXPECT_EQ(f8e4m3_to_f32(0x08), 0.015625f);           // 2^-6
  EXPECT_EQ(f8e4m3_to_f32(0x01), 0.001953125f);        // 2^-9
  EXPECT_EQ(f8e4m3_to_f32(0x38), 1.f);
  EXPECT_EQ(f8e4m3_to_f32(0x78), 256.f);               // exponent 15 holds numbers but for mantissa 7
}

TEST(Fp8, EveryE5m2CodeIsItsDefinition) {
  for (int code = 0; code < 256; ++code) {
    SCOPED_TRACE(code);
    const float got = f8e5m2_to_f32(uint8_t(code));
    const int e = (code >> 2) & 0x1f, m = code & 3;
    if (e == 31) {
      EXPECT_TRUE(m ? std::isnan(got) : std::isinf(got));
      EXPECT_TRUE(f8e5m2_non_finite(uint8_t(code)));
      if (!m) {
        EXPECT_EQ(got < 0, (code & 0x80) != 0);
      }
      continue;
    }
    EXPECT_FALSE(f8e5m2_non_finite(uint8_t(code)));
    EXPECT_EQ(double(got), by_definition(code, 5, 2));
  }
  EXPECT_EQ(f8e5m2_to_f32(0x7b), 57344.f);  // the largest
  EXPECT_EQ(f8e5m2_to_f32(0x01), std::ldexp(1.f, -16));
}

TEST(Fp8, EncodingEveryNumberGivesItsCodeBack) {
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;
    EXPECT_EQ(f32_to_f8e4m3(f8e4m3_to_f32(uint8_t(code))), code) << code;
  }
}

// Between neighbours a and b (codes c and c + 1 of one sign), a value just
// past the middle goes to the nearer; the middle itself to the even code.
TEST(Fp8, EncodingRoundsToNearestTiesToEven) {
  for (int code = 0; code < 0x7e; ++code) {
    SCOPED_TRACE(code);
    const double a = by_definition(code, 4, 3), b = by_definition(code + 1, 4, 3), mid = (a + b) / 2;
    const int even = code % 2 == 0 ? code : code + 1;
    EXPECT_EQ(f32_to_f8e4m3(float(mid)), even);
    EXPECT_EQ(f32_to_f8e4m3(-float(mid)), 0x80 | even);
    EXPECT_EQ(f32_to_f8e4m3(std::nextafter(float(mid), 0.f)), code);
    EXPECT_EQ(f32_to_f8e4m3(std::nextafter(float(mid), 1000.f)), code + 1);
  }
  // Below half the smallest subnormal: zero; at half: the even one, zero.
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.f, -11)), 0x00);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.f, -10)), 0x00);
  EXPECT_EQ(f32_to_f8e4m3(std::ldexp(1.5f, -10)), 0x01);
  EXPECT_EQ(f32_to_f8e4m3(-0.f), 0x80);
  EXPECT_EQ(f32_to_f8e4m3(1e-30f), 0x00);
}

TEST(Fp8, EncodingSaturatesAtTheLargestAndKeepsNaN) {
  EXPECT_EQ(f32_to_f8e4m3(448.f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3(464.f), 0x7e);  // halfway to 480, which e4m3fn lacks: to even, 448
  EXPECT_EQ(f32_to_f8e4m3(1e6f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3(-INFINITY), 0xfe);
  EXPECT_EQ(f32_to_f8e4m3(NAN) & 0x7f, 0x7f);
}

TEST(Fp8, TheTypesAreNamedAsSafetensorsSpellsThem) {
  EXPECT_EQ(dtype_name(DType::F8_E4M3), "F8_E4M3");
  EXPECT_EQ(dtype_name(DType::F8_E5M2), "F8_E5M2");
  EXPECT_EQ(dtype_from_name("F8_E4M3"), DType::F8_E4M3);
  EXPECT_EQ(dtype_from_name("F8_E5M2"), DType::F8_E5M2);
  EXPECT_EQ(dtype_size(DType::F8_E4M3), 1u);
  Tensor t = Tensor::zeros(DType::F8_E5M2, {3, 5});
  EXPECT_EQ(t.nbytes(), 15u);
}

// Widened code by code (the block scales are the importer's business).
TEST(Fp8, ToF32DecodesCodeByCode) {
  std::vector<uint8_t> codes = {0x38, 0xc0, 0x01, 0x7e};  // 1, -2, 2^-9, 448
  Tensor t = Tensor::view(DType::F8_E4M3, {2, 2}, codes.data(), nullptr);
  Tensor f = to_f32(t);
  EXPECT_EQ(std::vector<float>(f.f32(), f.f32() + 4), (std::vector<float>{1.f, -2.f, 0.001953125f, 448.f}));
  std::vector<uint8_t> e5 = {0x3c, 0xc0};  // 1, -2
  Tensor g = to_f32(Tensor::view(DType::F8_E5M2, {2}, e5.data(), nullptr));
  EXPECT_EQ(g.f32()[0], 1.f);
  EXPECT_EQ(g.f32()[1], -2.f);
}

}  // namespace
}  // namespace arch

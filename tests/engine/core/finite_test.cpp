// NaN and Inf counted as stored: floats one by one, quantized rows by their
// block scales.
#include "engine/core/finite.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/quant.h"

namespace arch {
namespace {

TEST(NonFinite, FloatsOneByOne) {
  std::vector<float> x = {1.f, NAN, 2.f, INFINITY, -INFINITY, 0.f};
  Tensor t = Tensor::view(DType::F32, {6}, x.data(), nullptr);
  EXPECT_EQ(non_finite_values(t), 3);
  std::vector<uint16_t> h = {0x3c00, 0x7c00, 0x7e00, 0xfc00, 0x0001};  // 1, Inf, NaN, -Inf, subnormal
  EXPECT_EQ(non_finite_values(Tensor::view(DType::F16, {5}, h.data(), nullptr)), 3);
  std::vector<uint16_t> b = {0x3f80, 0x7f80, 0x7fc1, 0xff80, 0x0001};
  EXPECT_EQ(non_finite_values(Tensor::view(DType::BF16, {5}, b.data(), nullptr)), 3);
  EXPECT_TRUE(all_finite(std::vector<float>{1.f, -3.f}));
  EXPECT_FALSE(all_finite(std::vector<float>{1.f, NAN}));
}

// An input's first value that is not a number, named with its index and
// element, as a user sees it (docs/malformed-inputs.md).
TEST(NonFinite, AnInputsFirstBadValueIsNamed) {
  std::vector<float> x(2 * 3 * 4, 0.5f);
  Tensor t = Tensor::view(DType::F32, {2, 3, 4}, x.data(), nullptr);
  EXPECT_EQ(first_non_finite(t), -1);
  EXPECT_TRUE(check_finite(t, "x").ok());
  x[17] = NAN;
  x[20] = -INFINITY;
  EXPECT_EQ(first_non_finite(t), 17);
  Status st = check_finite(t, "in.safetensors: tensor 'pixel_values'");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "in.safetensors: tensor 'pixel_values' holds NaN at index 17 (element [1, 1, 1] of [2, 3, 4]; 2 of 24 "
            "values are NaN or Inf): an input must be all numbers");
  std::vector<uint16_t> b = {0x3f80, 0x3f80, 0xff80};  // 1, 1, -Inf
  EXPECT_EQ(check_finite(Tensor::view(DType::BF16, {3}, b.data(), nullptr), "c").error().message,
            "c holds -inf at index 2 (element [2] of [3]; 1 of 3 values are NaN or Inf): an input must be all numbers");
  std::vector<int32_t> ids = {1, 2};
  EXPECT_TRUE(check_finite(Tensor::view(DType::I32, {2}, ids.data(), nullptr), "ids").ok());
}

// FP8 codes one by one: e4m3fn's NaN (it has no Inf), e5m2's NaN and Inf.
TEST(NonFinite, Fp8CodesOneByOne) {
  std::vector<uint8_t> e4 = {0x38, 0x7f, 0x7e, 0xff, 0x78, 0x80};  // 1, NaN, 448, -NaN, 256, -0
  Tensor t = Tensor::view(DType::F8_E4M3, {2, 3}, e4.data(), nullptr);
  EXPECT_EQ(non_finite_values(t), 2);
  EXPECT_EQ(first_non_finite(t), 1);
  EXPECT_EQ(check_finite(t, "w").error().message,
            "w holds NaN at index 1 (element [0, 1] of [2, 3]; 2 of 6 values are NaN or Inf): an input must be all numbers");
  std::vector<uint8_t> e5 = {0x3c, 0x7b, 0x7c, 0xfd};  // 1, 57344, Inf, NaN
  Tensor u = Tensor::view(DType::F8_E5M2, {4}, e5.data(), nullptr);
  EXPECT_EQ(non_finite_values(u), 2);
  EXPECT_EQ(first_non_finite(u), 2);
  EXPECT_NE(check_finite(u, "u").error().message.find("u holds inf at index 2"), std::string::npos);
}

TEST(NonFinite, QuantizedRowsByTheirScales) {
  std::vector<float> w(2 * 64, 0.5f);
  for (DType q : {DType::Q8_0, DType::Q4_0}) {
    const size_t row = quant_row_bytes(q, 64);
    std::vector<uint8_t> bytes(2 * row);
    for (int r = 0; r < 2; ++r) quantize_row(q, w.data() + r * 64, 64, bytes.data() + r * row);
    Tensor t = Tensor::view(q, {2, 64}, bytes.data(), nullptr);
    EXPECT_EQ(non_finite_values(t), 0);
    const uint16_t inf = 0x7c00;
    std::memcpy(bytes.data() + row + quant_scales_offset(q, 64) + 2, &inf, 2);  // row 1, block 1
    EXPECT_EQ(non_finite_values(t), 32);
  }
}

}  // namespace
}  // namespace arch

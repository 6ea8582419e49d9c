// The cpu backend's tiles (Q8_0 and Q4_0 by 16 rows, BF16 by 64): every row
// reads back exactly as its row layout did (through the core, which knows
// the layout only as registered), whole tiles are stored (the
// last padded), and the bytes sit where kernels/cpu/tiles.h says.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "engine/core/quant.h"
#include "engine/core/tensor.h"
#include "kernels/cpu/tiles.h"

namespace arch {
namespace {

Tensor random_rows(DType rows, int64_t n, int64_t k) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor f = Tensor::zeros(DType::F32, {n, k});
  for (int64_t i = 0; i < n * k; ++i) f.f32()[i] = dist(rng);
  return convert_to(f, rows);
}

TEST(Tiles, RowsReadBackExactly) {
  for (DType rows : {DType::Q8_0, DType::Q4_0})
    for (int64_t n : {1, 16, 37}) {
      const int64_t k = 192;
      Tensor t = random_rows(rows, n, k), tiles = interleave_rows(t);
      ASSERT_EQ(tiles.dtype, rows);  // the stored type stays; the layout says tiles
      ASSERT_EQ(tiles_of(tiles), tiles_for(rows));
      EXPECT_EQ(rows_type(tiles_of(tiles)), rows);
      // Whole tiles: 37 rows take 48 rows' bytes.
      EXPECT_EQ(tiles.nbytes(), size_t((n + 15) / 16 * 16) * quant_row_bytes(rows, k));
      Tensor want = to_f32(t), got = to_f32(tiles);
      for (int64_t i = 0; i < n * k; ++i) ASSERT_EQ(got.f32()[i], want.f32()[i]) << dtype_name(rows) << " n=" << n;
    }
}

TEST(Tiles, Bf16RowsReadBackExactly) {
  for (int64_t n : {3, 64, 70}) {
    const int64_t k = 80;
    Tensor t = random_rows(DType::BF16, n, k), tiles = interleave_rows(t);
    ASSERT_EQ(tiles_of(tiles), Tiles::BF16x64);
    EXPECT_EQ(tiles.nbytes(), size_t((n + 63) / 64 * 64) * k * 2);  // whole tiles of 64 rows
    Tensor want = to_f32(t), got = to_f32(tiles);
    for (int64_t i = 0; i < n * k; ++i) ASSERT_EQ(got.f32()[i], want.f32()[i]) << "n=" << n;
  }
  // oneDNN's BA16a64b2a: row 2, values 22 and 23 sit in block 1 (values
  // 16..31), pair 3, row 2's 4 bytes.
  Tensor t = random_rows(DType::BF16, 64, 32), tiles = interleave_rows(t);
  EXPECT_EQ(0, std::memcmp(static_cast<const uint8_t*>(tiles.data) + 2048 + 3 * 256 + 4 * 2,
                           static_cast<const uint16_t*>(t.data) + 2 * 32 + 22, 4));
  EXPECT_TRUE(tileable(DType::BF16, 80));
  EXPECT_FALSE(tileable(DType::BF16, 72));
  EXPECT_FALSE(tileable(DType::F16, 64));
}

TEST(Tiles, ValuesSitWhereTheLayoutSays) {
  const int64_t k = 64;
  Tensor t = random_rows(DType::Q4_0, 16, k), tiles = interleave_rows(t);
  const auto* src = static_cast<const uint8_t*>(t.data);
  const auto* dst = static_cast<const uint8_t*>(tiles.data);
  const size_t row_bytes = quant_row_bytes(DType::Q4_0, k);
  // Row 5, value 17 (block 0): the high nibble of byte 4*5 + 1 of group 0.
  // In the row layout value 17 is the low nibble of byte 17.
  EXPECT_EQ(dst[4 * 5 + 1] >> 4, src[5 * row_bytes + 17] & 0x0F);
  // Row 5, value 32 + 6 (block 1, value 6): the low nibble of byte 4*5 + 2
  // of group 1 of block 1; in the row layout the high nibble of byte 6.
  const size_t block1 = interleaved_block_bytes(Tiles::Q4_0x16);
  EXPECT_EQ(dst[block1 + 64 + 4 * 5 + 2] & 0x0F, src[5 * row_bytes + 6] >> 4);
  // Row 5's scale of block 1, after block 1's values.
  EXPECT_EQ(0, std::memcmp(dst + block1 + interleaved_values_bytes(Tiles::Q4_0x16) + 2 * 5,
                           src + 5 * row_bytes + quant_scales_offset(DType::Q4_0, k) + 2, 2));
  Tensor q8 = random_rows(DType::Q8_0, 16, k), q8_tiles = interleave_rows(q8);
  const auto* s8 = static_cast<const uint8_t*>(q8.data);
  const auto* d8 = static_cast<const uint8_t*>(q8_tiles.data);
  // Row 3, value 9: group 2 (values 8..11), byte 4*3 + 1.
  EXPECT_EQ(d8[2 * 64 + 4 * 3 + 1], s8[3 * quant_row_bytes(DType::Q8_0, k) + 9]);
}

}  // namespace
}  // namespace arch

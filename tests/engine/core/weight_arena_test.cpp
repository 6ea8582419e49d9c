// Weights rewritten at load share large blocks: each tensor zero-filled,
// aligned for SIMD, apart from the others, and alive as long as it is held.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "engine/core/weight_arena.h"

namespace arch {
namespace {

bool all_zero(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  for (size_t i = 0; i < t.nbytes(); ++i)
    if (p[i]) return false;
  return true;
}

TEST(WeightArena, PacksZeroedAlignedTensorsApart) {
  Tensor a = weight_zeros(DType::F32, {3, 5});  // 60 bytes: the next starts 64 on
  Tensor b = weight_zeros(DType::BF16, {7});
  EXPECT_TRUE(all_zero(a));
  EXPECT_TRUE(all_zero(b));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data) % 64, 0u);
  EXPECT_EQ(static_cast<uint8_t*>(b.data), static_cast<uint8_t*>(a.data) + 64);  // one block, packed
  std::memset(a.data, 0xFF, a.nbytes());
  EXPECT_TRUE(all_zero(b));
  EXPECT_EQ(a.dtype, DType::F32);
  EXPECT_EQ(a.shape, (Dims{3, 5}));
}

TEST(WeightArena, OutlivesItsNeighboursAndTakesLargeTensorsWhole) {
  Tensor kept;
  {
    Tensor first = weight_zeros(DType::F32, {16});
    kept = weight_zeros(DType::F32, {16});
    kept.f32()[15] = 2.5f;
  }
  EXPECT_EQ(kept.f32()[15], 2.5f);  // the block stays while a tensor in it does
  const int64_t big = (int64_t(80) << 20) / 4;  // larger than a block
  Tensor large = weight_zeros(DType::F32, {big});
  large.f32()[big - 1] = 1.0f;
  EXPECT_TRUE(large.f32()[0] == 0.0f && large.f32()[big - 1] == 1.0f);
  Tensor after = weight_zeros(DType::F32, {16});  // still packs after kept, not after large
  EXPECT_EQ(static_cast<uint8_t*>(after.data), static_cast<uint8_t*>(kept.data) + 64);
}

}  // namespace
}  // namespace arch

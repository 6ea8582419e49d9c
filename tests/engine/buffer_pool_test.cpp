// The interpreter's buffer pool: a freed buffer is taken again for the same
// size (zero-filled anew), and a tensor may outlive the pool's other owners.
#include <gtest/gtest.h>

#include "engine/buffer_pool.h"
#include "engine/interpreter.h"
#include "engine/model.h"
#include "engine/session.h"
#include "importer/toy_checkpoint.h"

namespace arch {
namespace {

TEST(BufferPool, RecyclesBySizeAndZeroFills) {
  auto pool = BufferPool::make();
  void* first = nullptr;
  {
    Tensor a = pool->zeros(DType::F32, {4, 8});
    a.f32()[3] = 7;
    first = a.data;
  }
  Tensor b = pool->zeros(DType::F32, {8, 4});  // same bytes
  EXPECT_EQ(b.data, first);
  EXPECT_EQ(b.f32()[3], 0.0f);
  EXPECT_EQ(pool->allocations(), 1u);
  EXPECT_EQ(pool->reuses(), 1u);
  Tensor c = pool->zeros(DType::F32, {3});  // another size: a fresh buffer
  EXPECT_NE(c.data, first);
  Tensor kept = pool->zeros(DType::I32, {2});
  pool.reset();  // the tensors keep what they need alive
  kept.i32()[1] = 5;
  EXPECT_EQ(kept.i32()[1], 5);
}

TEST(BufferPool, DecodeStepsAllocateNothingOnceWarm) {
  std::string dir = ::testing::TempDir() + "/buffer_pool_toy";
  ASSERT_TRUE(write_toy_checkpoint(dir).ok());
  auto m = load_model(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  Session s(**m, 16);
  ASSERT_TRUE(s.step(std::vector<int32_t>{1, 2, 3}).ok());
  ASSERT_TRUE(s.step(std::vector<int32_t>{4}).ok());
  ASSERT_TRUE(s.step(std::vector<int32_t>{5}).ok());
  size_t warm = s.buffers().allocations();
  for (int32_t t = 6; t < 12; ++t) ASSERT_TRUE(s.step(std::vector<int32_t>{t}).ok());
  EXPECT_EQ(s.buffers().allocations(), warm);
  EXPECT_GT(s.buffers().reuses(), 0u);
}

}  // namespace
}  // namespace arch

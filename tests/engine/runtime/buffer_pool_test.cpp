// The interpreter's buffer pool: a freed buffer is taken again for the same
// size (zero-filled anew), and a tensor may outlive the pool's other owners.
// A warm decode step makes no heap allocation per node (operator new is
// counted here, for this test binary).
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include "engine/runtime/buffer_pool.h"
#include "engine/runtime/interpreter.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/toy_checkpoint.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_news{0};
}  // namespace

// The replacements below pair operator new with malloc and delete with
// free; GCC sees free on a pointer from new and warns, wrongly here.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) {
    g_news.fetch_add(1, std::memory_order_relaxed);
  }
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
// The nothrow forms too (std::get_temporary_buffer, under stable_sort, takes
// them): else the library's new meets the free below (AddressSanitizer's
// alloc-dealloc-mismatch).
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  try {
    return operator new(n);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return operator new(n, std::nothrow); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

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

// The walk keeps its slots (values, shapes) from step to step, the pool its
// lists and shared_ptr control blocks, and the kernels their scratch: what
// a warm decode step on the cpu path still allocates is the step's own
// inputs and outputs, the same few whatever the depth (3300 a token on the
// 0.5B shape before, 8 or more per node). The reference kernels are the
// plain truth and not held to this.
long allocations_per_decode_step(int64_t layers) {
  namespace fs = std::filesystem;
  LlamaShape shape;
  shape.num_hidden_layers = layers;
  const fs::path dir = fs::temp_directory_path() / ("alloc_toy_" + std::to_string(layers) + "_" +
                                                    std::to_string(getpid()));
  EXPECT_TRUE(write_random_checkpoint(dir.string(), shape).ok());
  LoadOptions lo;
  lo.backend = "cpu";
  auto m = load_model(dir.string(), lo);
  fs::remove_all(dir);
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (!m.ok()) return -1;
  Session s(**m, 32);
  EXPECT_TRUE(s.step(std::vector<int32_t>{1, 2, 3}).ok());
  for (int32_t t = 4; t < 7; ++t) EXPECT_TRUE(s.step(std::vector<int32_t>{t}).ok());
  const int steps = 8;
  g_news = 0;
  g_counting = true;
  for (int32_t t = 7; t < 7 + steps; ++t) EXPECT_TRUE(s.step(std::vector<int32_t>{t}).ok());
  g_counting = false;
  return g_news / steps;
}

TEST(BufferPool, DecodeStepsAllocateNoMoreForMoreLayers) {
  const long shallow = allocations_per_decode_step(2), deep = allocations_per_decode_step(8);
  EXPECT_GE(shallow, 0);
  EXPECT_LE(shallow, 32) << "allocations a decode step, 2 layers";
  EXPECT_EQ(deep, shallow) << "6 more layers (some 120 more nodes) allocate more a step";
}

}  // namespace
}  // namespace arch

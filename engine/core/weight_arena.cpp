#include "engine/core/weight_arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <thread>
#include <vector>

#include "engine/core/huge_pages.h"

namespace arch {

namespace {

constexpr size_t kBlock = size_t(64) << 20;  // address space; untouched pages cost nothing
constexpr size_t kAlign = 64;                // every SIMD width the kernels use

struct Block {
  uint8_t* base = nullptr;  // kHugePage-aligned
  void* mapping = nullptr;
  size_t mapped = 0, size = 0, used = 0;
  ~Block() {
    if (mapping) munmap(mapping, mapped);
  }
};

// A fresh anonymous mapping (zero pages), aligned to a huge page and
// advised to use them. The advice may be refused (THP off): the pages then
// stay small and nothing else changes.
std::shared_ptr<Block> new_block(size_t size) {
  auto b = std::make_shared<Block>();
  b->size = (size + kHugePage - 1) / kHugePage * kHugePage;
  b->mapped = b->size + kHugePage;
  b->mapping = mmap(nullptr, b->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b->mapping == MAP_FAILED) {
    b->mapping = nullptr;
    throw std::bad_alloc();
  }
  b->base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(b->mapping) + kHugePage - 1) / kHugePage *
                                       kHugePage);
  advise_huge_pages(b->base, b->size);
  return b;
}

std::mutex arena_mutex;
std::weak_ptr<Block> current;  // weak: the arena itself keeps no memory alive

}  // namespace

Tensor weight_zeros(DType dtype, Dims shape, uint8_t layout) {
  Tensor t;
  t.dtype = dtype;
  t.layout = layout;
  t.shape = std::move(shape);
  const size_t bytes = (std::max<size_t>(t.nbytes(), 1) + kAlign - 1) / kAlign * kAlign;
  std::lock_guard<std::mutex> lock(arena_mutex);
  std::shared_ptr<Block> block = current.lock();
  if (!block || block->size - block->used < bytes) {
    block = new_block(std::max(bytes, kBlock));
    if (bytes < kBlock) current = block;  // a block of its own is full already
  }
  t.data = block->base + block->used;
  block->used += bytes;
  t.owner = std::shared_ptr<const void>(block, t.data);
  return t;
}

Tensor weight_copy(const Tensor& t) {
  Tensor out = weight_zeros(t.dtype, t.shape, t.layout);
  // Load time: a large matrix in slices, one per core (most of a copy's
  // cost is the kernel clearing the new pages, which runs in parallel).
  const size_t bytes = t.nbytes();
  const size_t slices = std::clamp<size_t>(bytes >> 22, 1, std::max(1u, std::thread::hardware_concurrency()));
  auto copy = [&](size_t i) {
    const size_t from = bytes * i / slices, to = bytes * (i + 1) / slices;
    std::memcpy(static_cast<uint8_t*>(out.data) + from, static_cast<const uint8_t*>(t.data) + from, to - from);
  };
  std::vector<std::thread> pool;
  for (size_t i = 1; i < slices; ++i) pool.emplace_back(copy, i);
  copy(0);
  for (std::thread& th : pool) th.join();
  return out;
}

}  // namespace arch

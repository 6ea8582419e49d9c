#include "engine/runtime/buffer_pool.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "engine/core/huge_pages.h"

namespace arch {

namespace {
// Beyond this many idle bytes a returned buffer is freed instead of kept:
// a long prompt's large activations should not stay resident all session.
constexpr size_t kMaxIdleBytes = size_t(256) << 20;
}  // namespace

BufferPool::~BufferPool() {
  for (auto& [bytes, list] : free_)
    for (void* p : list) std::free(p);
}

namespace {

// shared_ptr control blocks, recycled: every leased buffer needs one, and a
// decode step leases one per node. Blocks go back to a process-wide list
// (a buffer's block may be freed after its pool is gone), which grows only
// to the most ever in use at once.
class ControlBlocks {
 public:
  void* take(size_t bytes) {
    {
      std::lock_guard<std::mutex> guard(lock_);
      auto& list = free_[bytes];
      if (!list.empty()) {
        void* p = list.back();
        list.pop_back();
        return p;
      }
    }
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void give(void* p, size_t bytes) {
    std::lock_guard<std::mutex> guard(lock_);
    free_[bytes].push_back(p);
  }

 private:
  std::mutex lock_;
  std::map<size_t, std::vector<void*>> free_;
};

ControlBlocks& control_blocks() {
  static auto* blocks = new ControlBlocks;  // never destroyed: tensors may outlive static destruction
  return *blocks;
}

template <typename T>
struct ControlBlockAllocator {
  using value_type = T;
  ControlBlockAllocator() = default;
  template <typename U>
  ControlBlockAllocator(const ControlBlockAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(control_blocks().take(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { control_blocks().give(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const ControlBlockAllocator<U>&) const { return true; }
};

}  // namespace

void BufferPool::lease(Tensor& t, bool zero) {
  const size_t used = t.nbytes();
  const size_t bytes = (std::max<size_t>(used, 1) + 63) / 64 * 64;  // 64-byte aligned, any SIMD width
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = free_.find(bytes);
    if (it != free_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      free_bytes_ -= bytes;
      ++reuses_;
    } else {
      ++allocations_;
    }
  }
  if (!p) p = allocate_buffer(bytes);
  if (!p) throw std::bad_alloc();
  if (zero) std::memset(p, 0, used);
  t.data = p;
  t.mapped = false;
  t.owner = std::shared_ptr<const void>(
      p, [self = shared_from_this(), bytes](const void* q) { self->give_back(const_cast<void*>(q), bytes); },
      ControlBlockAllocator<char>());
}

Tensor BufferPool::zeros(DType dtype, Dims shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  lease(t, true);
  return t;
}

void BufferPool::give_back(void* p, size_t bytes) {
  std::lock_guard<std::mutex> guard(lock_);
  if (free_bytes_ + bytes > kMaxIdleBytes) {
    std::free(p);
    return;
  }
  free_[bytes].push_back(p);
  free_bytes_ += bytes;
}

}  // namespace arch

#include "engine/buffer_pool.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace arch {

namespace {
// Beyond this many idle bytes a returned buffer is freed instead of kept:
// a long prompt's large activations should not stay resident all session.
constexpr size_t kMaxIdleBytes = size_t(256) << 20;
}  // namespace

BufferPool::~BufferPool() {
  for (auto& [bytes, p] : free_) std::free(p);
}

Tensor BufferPool::uninitialized(DType dtype, Dims shape) {
  Tensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  const size_t bytes = (std::max<size_t>(t.nbytes(), 1) + 63) / 64 * 64;  // 64-byte aligned, any SIMD width
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> guard(lock_);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      p = it->second;
      free_.erase(it);
      free_bytes_ -= bytes;
      ++reuses_;
    } else {
      ++allocations_;
    }
  }
  if (!p) p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  t.data = p;
  auto self = shared_from_this();
  t.owner = std::shared_ptr<const void>(p, [self, bytes](const void* q) { self->give_back(const_cast<void*>(q), bytes); });
  return t;
}

Tensor BufferPool::zeros(DType dtype, Dims shape) {
  Tensor t = uninitialized(dtype, std::move(shape));
  std::memset(t.data, 0, t.nbytes());
  return t;
}

void BufferPool::give_back(void* p, size_t bytes) {
  std::lock_guard<std::mutex> guard(lock_);
  if (free_bytes_ + bytes > kMaxIdleBytes) {
    std::free(p);
    return;
  }
  free_.emplace(bytes, p);
  free_bytes_ += bytes;
}

}  // namespace arch

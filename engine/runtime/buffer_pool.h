// Output buffers recycled by size. The interpreter frees each value after
// its last reader; with a pool, that buffer goes back here and the next
// node or step needing the same size takes it, so once a session has run a
// step or two, decoding allocates nothing from the heap. Tensors handed out
// keep the pool alive (their deleter returns the buffer), so a kept output
// may outlive the session that made it.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "engine/core/tensor.h"

namespace arch {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> make() { return std::shared_ptr<BufferPool>(new BufferPool()); }
  ~BufferPool();

  // A zero-filled tensor, in a recycled buffer where one of its size is free.
  Tensor zeros(DType dtype, Dims shape);
  // Gives `t` (its dtype and shape set) storage in place, zero-filled or
  // left as the buffer was (for a kernel that writes every element): the
  // interpreter's slots keep their shapes' storage from step to step, so a
  // decode step allocates nothing from the heap here.
  void lease(Tensor& t, bool zero);

  size_t allocations() const { return allocations_; }  // buffers ever taken from the heap
  size_t reuses() const { return reuses_; }

 private:
  BufferPool() = default;
  void give_back(void* p, size_t bytes);

  std::mutex lock_;
  std::map<size_t, std::vector<void*>> free_;  // by rounded size; emptied lists stay, with their capacity
  size_t free_bytes_ = 0;
  size_t allocations_ = 0, reuses_ = 0;
};

}  // namespace arch

// What the processes a model is split over do together (engine/distributed
// implements it on MPI): the kernels of all_reduce and all_gather call it.
// Every process calls the same collectives in the same order.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/error.h"

namespace arch {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // data[0, n) summed over every process, in place on each.
  virtual Status all_reduce_sum(float* data, int64_t n) = 0;
  // Each process's `bytes` (bytes[rank()] of them at `mine`) put one after
  // another, in rank order, into `all` on every process.
  virtual Status all_gather(const void* mine, const std::vector<int64_t>& bytes, void* all) = 0;
  // Pipeline stages: `bytes` to process `to`, or from process `from`, in the
  // order sent.
  virtual Status send(int to, const void* data, int64_t bytes) = 0;
  virtual Status recv(int from, void* data, int64_t bytes) = 0;
};

}  // namespace arch

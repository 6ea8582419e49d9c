// The machine's memory read bandwidth as decode meets it: every thread
// summing its share of a buffer far larger than the caches, best of a few
// passes (the machine is shared). bench_kernels' yardstick and archrun
// bench's bound on decode. The buffer is weight storage (weight_arena.h), so
// it gets the pages the weights get.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

#include "engine/core/weight_arena.h"

namespace arch {

// `bytes` (a multiple of 64) of ones, stored as the weights are.
struct ReadBuffer {
  Tensor storage;
  size_t words;
  explicit ReadBuffer(size_t bytes) : storage(weight_zeros(DType::I32, {int64_t(bytes / 4)})), words(bytes / 8) {
    std::fill_n(static_cast<uint64_t*>(storage.data), words, uint64_t(1));
  }
  const uint64_t* data() const { return static_cast<const uint64_t*>(storage.data); }
};

// Seconds for one pass over buf, all threads; the sum goes to sink so the
// reads are not optimised away.
inline double read_pass_seconds(const ReadBuffer& buf, uint64_t& sink) {
  auto t0 = std::chrono::steady_clock::now();
  const uint64_t* w = buf.data();
  uint64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(dynamic, 1 << 14)
  for (size_t i = 0; i < buf.words; i += 8)
    total += w[i] + w[i + 1] + w[i + 2] + w[i + 3] + w[i + 4] + w[i + 5] + w[i + 6] + w[i + 7];
  sink += total;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Bytes per second over a buffer of `bytes`, best of `passes`.
inline double read_bandwidth(size_t bytes, int passes) {
  const ReadBuffer buf(bytes);
  uint64_t sink = 0;
  double best = 1e9;
  for (int rep = 0; rep < passes; ++rep) best = std::min(best, read_pass_seconds(buf, sink));
  return sink == 0 ? 0.0 : double(buf.words * 8) / best;
}

}  // namespace arch

// The machine's memory read bandwidth as decode meets it: every thread
// summing its share of a buffer far larger than the caches, best of a few
// passes (the machine is shared). bench_kernels' yardstick and archrun
// bench's bound on decode.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace arch {

// Seconds for one pass over buf, all threads; the sum goes to sink so the
// reads are not optimised away.
inline double read_pass_seconds(const std::vector<uint64_t>& buf, uint64_t& sink) {
  auto t0 = std::chrono::steady_clock::now();
  uint64_t total = 0;
#pragma omp parallel for reduction(+ : total) schedule(dynamic, 1 << 14)
  for (size_t i = 0; i < buf.size(); i += 8)
    total += buf[i] + buf[i + 1] + buf[i + 2] + buf[i + 3] + buf[i + 4] + buf[i + 5] + buf[i + 6] + buf[i + 7];
  sink += total;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Bytes per second over a buffer of `bytes`, best of `passes`.
inline double read_bandwidth(size_t bytes, int passes) {
  std::vector<uint64_t> buf(bytes / 8, 1);
  uint64_t sink = 0;
  double best = 1e9;
  for (int rep = 0; rep < passes; ++rep) best = std::min(best, read_pass_seconds(buf, sink));
  return sink == 0 ? 0.0 : double(buf.size() * 8) / best;
}

}  // namespace arch

// Units of work [0, n) over the OpenMP team, each thread first through a
// contiguous share of its own, then through what the others have left.
//
// Thread t takes the units of its share [t n / T, (t + 1) n / T) from the
// front, in order: one stream whose prefetches run ahead into its own next
// units. Once its share is done it takes the other shares' last units, from
// their backs, while their owners go on from their fronts. A thread held
// back (a late wake, a core it shares with other work, a preemption) is
// caught up by the others rather than waited for at the region's end.
#pragma once

#include <omp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>

namespace arch {

namespace share_out_detail {

// A share's units still to take, [front, back), in one word so that its
// owner (front) and a thief (back) claim with one compare-and-swap each.
struct alignas(64) Share {
  std::atomic<uint64_t> ends;
};

inline uint64_t pack(uint64_t front, uint64_t back) { return front | back << 32; }

// The share's next unit from the front (owner) or its last from the back
// (thief); -1 when none is left.
inline int64_t claim(Share& s, bool from_back) {
  uint64_t v = s.ends.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t front = v & 0xFFFFFFFFu, back = v >> 32;
    if (front >= back) return -1;
    const uint64_t next = from_back ? pack(front, back - 1) : pack(front + 1, back);
    if (s.ends.compare_exchange_weak(v, next, std::memory_order_relaxed)) return int64_t(from_back ? back - 1 : front);
  }
}

}  // namespace share_out_detail

// run(u) for every unit u in [0, n), each exactly once, on the team (n
// below 2^32). First, in the same region, every thread runs first(t, team)
// and waits for the others (a matmul's activations quantized, rows shared
// out, before any thread multiplies: one region, not two).
template <typename F, typename First>
void share_out(int64_t n, F&& run, First&& first) {
  using namespace share_out_detail;
  const int threads = omp_get_max_threads();
  if (threads == 1 || n < 2 || omp_in_parallel()) {
    first(0, 1);
    for (int64_t u = 0; u < n; ++u) run(u);
    return;
  }
  // The shares are made for the team asked for; a team given fewer threads
  // leaves the missing ones' shares to be taken from the back. This
  // thread's words, kept across calls (a decode step makes ~100 of them);
  // a plain pointer, so the team reads this thread's, not thread_locals of
  // its own.
  thread_local std::unique_ptr<Share[]> kept;
  thread_local int kept_size = 0;
  if (kept_size < threads) kept.reset(new Share[size_t(threads)]), kept_size = threads;
  Share* const shares = kept.get();
  for (int t = 0; t < threads; ++t)
    shares[size_t(t)].ends.store(pack(uint64_t(n * t / threads), uint64_t(n * (t + 1) / threads)),
                                 std::memory_order_relaxed);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    first(t, omp_get_num_threads());
#pragma omp barrier
    for (int64_t u; (u = claim(shares[size_t(t)], false)) >= 0;) run(u);
    for (int k = 1; k < threads; ++k)
      for (int64_t u; (u = claim(shares[size_t((t + k) % threads)], true)) >= 0;) run(u);
  }
}

template <typename F>
void share_out(int64_t n, F&& run) {
  share_out(n, std::forward<F>(run), [](int, int) {});
}

}  // namespace arch

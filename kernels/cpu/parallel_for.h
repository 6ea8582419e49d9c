// A loop over [0, n) on the OpenMP team, or plain where the team would not
// pay. OpenMP's `parallel if (false)`, and a region opened inside another
// (a batched step's sequences side by side), still make a team of one and
// free it: 1.2 us a call on the machines these kernels are measured on (a
// futex system call each), and a decode step runs a few hundred small ops.
#pragma once

#include <cstdint>

#include <omp.h>

namespace arch {

template <typename F>
void parallel_for(int64_t n, bool parallel, F&& body) {
  if (parallel && n > 1 && omp_get_max_threads() > 1 && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) body(i);
    return;
  }
  for (int64_t i = 0; i < n; ++i) body(i);
}

}  // namespace arch

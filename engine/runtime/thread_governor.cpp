#include "engine/runtime/thread_governor.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>

#include <omp.h>

namespace arch {

ThreadPolicy::ThreadPolicy(int max_threads) : max_(std::max(1, max_threads)), threads_(max_) {}

int ThreadPolicy::after_window(double least_share) {
  const bool busy = least_share < kBusyShare;
  if (trial_) {
    trial_ = false;
    if (busy) {  // still contended: back, and wait longer before the next try
      --threads_;
      retry_after_ = std::min(retry_after_ * 2, kRetryAfterMost);
      strikes_ = quiet_ = 0;
      return threads_;
    }
    retry_after_ = kRetryAfter;  // the core is free again
  }
  if (busy) {
    quiet_ = 0;
    if (++strikes_ >= kStrikes && threads_ > 1) {
      --threads_;
      strikes_ = 0;
    }
    return threads_;
  }
  strikes_ = 0;
  if (threads_ < max_ && ++quiet_ >= retry_after_) {
    ++threads_;
    quiet_ = 0;
    trial_ = true;
  }
  return threads_;
}

namespace {

double seconds(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

}  // namespace

ThreadGovernor::ThreadGovernor(int max_threads) : max_(std::max(1, max_threads)), policy_(max_) {}

void ThreadGovernor::find_clocks() {
  const int n = threads();
  std::vector<clockid_t> found(static_cast<size_t>(n));
  std::vector<char> have(size_t(n), 0);
#pragma omp parallel num_threads(n)
  {
    const int t = omp_get_thread_num();
    clockid_t c;
    if (pthread_getcpuclockid(pthread_self(), &c) == 0) found[size_t(t)] = c, have[size_t(t)] = 1;
  }
  clocks_.clear();
  for (int t = 0; t < n; ++t)
    if (have[size_t(t)]) clocks_.push_back(found[size_t(t)]);
}

// The threads' CPU clocks are read once a window (reading another
// thread's is a system call); the wall time is summed over the decode
// steps alone, so time between them (sampling, printing) does not count.
// Threads spin between a window's steps, so an uncontended one still shows
// all of the steps' time or more.
void ThreadGovernor::begin_decode() {
  if (steps_ == 0) {
    find_clocks();
    cpu_start_.resize(clocks_.size());
    for (size_t t = 0; t < clocks_.size(); ++t) cpu_start_[t] = seconds(clocks_[t]);
    wall_ = 0;
  }
  omp_set_num_threads(threads());
  wall_start_ = seconds(CLOCK_MONOTONIC);
}

void ThreadGovernor::end_decode() {
  wall_ += seconds(CLOCK_MONOTONIC) - wall_start_;
  ++steps_total_;
  if (threads() < max_) ++reduced_total_;
  if (!window_ends(++steps_, wall_)) return;
  steps_ = 0;
  if (wall_ <= 0 || clocks_.empty()) return;
  double least = 1.0;
  for (size_t t = 0; t < clocks_.size(); ++t) least = std::min(least, (seconds(clocks_[t]) - cpu_start_[t]) / wall_);
  policy_.after_window(least);
}

void ThreadGovernor::begin_prompt() {
  omp_set_num_threads(threads());
  steps_ = 0;  // a window is decode steps back to back
}


}  // namespace arch

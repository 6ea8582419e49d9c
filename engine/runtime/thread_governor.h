// Decode steps and prompts on a machine where other work holds some of the
// cores.
//
// An OpenMP team waits for its slowest thread at every barrier, and a decode
// step has about a hundred of them. When another process shares a core with
// one of the team's threads, every barrier waits for that thread's turn on
// its core, and two threads decode slower than one would (0.5B q4 on two
// cores, one of them busy: 52 tok/s on 2 threads, 101 on 1).
//
// The governor measures, over windows of decode steps, what share
// of the steps' wall time every thread of the team got on a CPU (its CPU
// clock; a waiting thread spins, so an unloaded one gets all of it). When
// the least share stays clearly under one for two windows in a row, it
// takes a thread out; after a while with fewer it tries one back. Its
// count applies to the session's later prompt chunks too (a chat's next
// turn): with a core taken, one thread ran 0.5B q4 prompts of 32-512
// tokens 1.2-1.8x faster than two. Prompts are not measured (a first
// prompt runs on every thread). Both compute the same on any number of
// threads: a decode step's kernels by construction, a prompt's as the
// tests find (oneDNN's partition of a product could in principle differ).
#pragma once

#include <ctime>
#include <vector>

namespace arch {

// The governor's decisions alone, from each window's least CPU share.
class ThreadPolicy {
 public:
  explicit ThreadPolicy(int max_threads);

  int threads() const { return threads_; }
  // A window of decode steps on threads() threads has ended; the least CPU
  // share among them was `least_share`. Returns the threads for the next.
  int after_window(double least_share);

  static constexpr double kBusyShare = 0.75;  // under it, a thread waited for its core
  static constexpr int kStrikes = 2;           // busy windows in a row before a thread goes
  // Quiet windows with fewer threads before one more is tried; doubled
  // after each try that finds the core still taken, up to kRetryAfterMost.
  static constexpr int kRetryAfter = 8;
  static constexpr int kRetryAfterMost = 64;

 private:
  int max_, threads_;
  int strikes_ = 0, quiet_ = 0, retry_after_ = kRetryAfter;
  bool trial_ = false;  // the last window tried one thread more
};

class ThreadGovernor {
 public:
  explicit ThreadGovernor(int max_threads);

  // Around one decode step: begin sets the team's size for it, end
  // measures it.
  void begin_decode();
  void end_decode();
  // Before a prompt chunk: the governed count, and no window open.
  void begin_prompt();

  int threads() const { return policy_.threads(); }
  // Decode steps run, and how many of them on fewer than every thread.
  long decode_steps() const { return steps_total_; }
  long reduced_steps() const { return reduced_total_; }

  // A measurement: kWindow decode steps, or fewer that took kWindowSeconds.
  // Steps a busy core slows a hundredfold (a 0.5B q4 step of 8 ms took ~1 s
  // on two threads, one sharing its core with a process of another session)
  // would otherwise keep the team for two windows of 16 such steps.
  static constexpr int kWindow = 16;
  static constexpr double kWindowSeconds = 0.25;
  static bool window_ends(int steps, double wall_seconds) {
    return steps >= kWindow || wall_seconds >= kWindowSeconds;
  }

 private:
  // The team's threads' CPU clocks, as the team is now (thread 0 first).
  void find_clocks();

  int max_;
  ThreadPolicy policy_;
  std::vector<clockid_t> clocks_;
  std::vector<double> cpu_start_;  // per thread, at the window's start
  double wall_start_ = 0, wall_ = 0;
  int steps_ = 0;
  long steps_total_ = 0, reduced_total_ = 0;
};

}  // namespace arch

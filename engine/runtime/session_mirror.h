// A model split over several processes (engine/distributed): rank 0 runs
// the sessions, and each call that computes with a session's state or
// moves it is told the other processes first, which make the same call on
// their share of the model (engine/distributed/follower.h). A call is told
// only once its inputs have passed the checks every process would make
// alike, so a refusal (a full context, a bad input) stays rank 0's own.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct SessionCall {
  enum Kind : int32_t {
    kOpen,       // a Session: n = max_context, m = adaptive threads
    kClose,
    kRun,        // graph on inputs (last_only)
    kRewind,     // to n
    kMark,
    kBackTo,     // n
    kReset,
    kOpenBatch,  // a BatchedSession: n slots of m positions
    kRunBatch,   // pieces
    kRelease,    // slot n
    kPeakRss,    // each process says its peak resident memory
    kExit,       // rank 0 is done: the others leave
  };
  Kind kind = kExit;
  int64_t session = 0;
  int64_t n = 0, m = 0;
  std::string graph{};
  bool last_only = false;
  std::map<std::string, Tensor> inputs{};
  std::vector<std::pair<int, std::vector<int32_t>>> pieces{};  // (slot, tokens)
};

class SessionMirror {
 public:
  virtual ~SessionMirror() = default;
  // A new session's id (every process numbers them alike).
  virtual int64_t next_id() = 0;
  // Tells every other process. The lock it returns is held until the call
  // is done here too: the processes' collectives then come in one order.
  virtual std::unique_lock<std::recursive_mutex> tell(const SessionCall& call) = 0;
  // The same lock, telling nothing: held over several calls that must not
  // be interleaved with another session's (a prompt's chunks).
  virtual std::unique_lock<std::recursive_mutex> hold() = 0;
  // Every process's peak resident memory in MB, rank 0's (`mine`) first.
  virtual std::vector<double> peak_rss_mb(double mine) = 0;
};

// This process's peak resident memory in MB (Linux's VmHWM; 0 elsewhere).
double own_peak_rss_mb();

}  // namespace arch

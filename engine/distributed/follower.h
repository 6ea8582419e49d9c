// Rank 0 of a split model tells its session calls (engine/runtime/
// session_mirror.h); the others make them on their own share of the model.
#pragma once

#include <atomic>
#include <memory>

#include "engine/distributed/mpi_world.h"
#include "engine/runtime/model.h"

namespace arch {

// Rank 0's side: each call sent to every other process, one at a time.
class MpiMirror : public SessionMirror {
 public:
  explicit MpiMirror(MpiWorld& world) : world_(world) {}
  // Rank 0 is done: the others leave follow().
  ~MpiMirror() override;
  int64_t next_id() override { return ++ids_; }
  std::unique_lock<std::recursive_mutex> tell(const SessionCall& call) override;
  std::unique_lock<std::recursive_mutex> hold() override { return std::unique_lock<std::recursive_mutex>(calls_); }
  std::vector<double> peak_rss_mb(double mine) override;

 private:
  MpiWorld& world_;
  std::recursive_mutex calls_;
  std::atomic<int64_t> ids_{0};
};

// The other ranks' side: every call rank 0 makes, until it is done. An
// error is this process's own (rank 0 told only calls that passed its
// checks): the caller ends the job with it.
Status follow(const Model& m, MpiWorld& world);

}  // namespace arch

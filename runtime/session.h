// A decoder session (seeds/002): one body run as a prompt chunk or a decode
// step; the position carried between calls; one KV cache per attention op,
// sized once for the whole conversation.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "runtime/thread_governor.h"

namespace arch {

class Session {
 public:
  // `max_context`: how many positions the KV caches hold.
  Session(const Model& m, int64_t max_context);

  // Runs `ids` at the current position (a prompt chunk, or one token for a
  // decode step) and returns the graph outputs named in `outputs`
  // (stacked ones such as layer_outputs assembled along a new first axis).
  // `last_only`: `logits` for the last position only (all generation needs;
  // skips the output projection of every other prompt position).
  Result<std::map<std::string, Tensor>> step(std::span<const int32_t> ids,
                                             const std::vector<std::string>& outputs = {"logits"},
                                             bool last_only = false);

  // --check: every fast step compared with its op's reference kernel.
  void check_with(CheckStats* stats);
  // Time every kernel call into `profile` (null: stop).
  void profile_with(OpProfile* profile) { state_.profile = profile; }

  int64_t position() const { return position_; }
  const BufferPool& buffers() const { return *state_.buffers; }
  int64_t max_context() const { return state_.max_context; }
  void reset();
  // The decode steps' thread governor, when adaptive_threads() was on at
  // construction (null otherwise).
  const ThreadGovernor* governor() const { return governor_.get(); }

 private:
  const Model& m_;
  RunState state_;
  int64_t position_ = 0;
  std::unique_ptr<ThreadGovernor> governor_;
};

}  // namespace arch

// Sequences run together (continuous batching): one set of KV caches holds
// `slots` regions of `context` positions each, one per sequence, and a call
// takes a piece of tokens for each of several sequences, all its rows in one
// pass over the weights: a decode step of 16 sequences reads the weights
// once, not 16 times. Each sequence's rows attend only over its own region
// (engine/core/op.h SequenceRows); every other op of a decoder's step works row by
// row, so a sequence's logits do not depend on what it was batched with.
// An encoder-decoder's sequences each hold their encoder's output (hold());
// the decoder's cross-attention reads each slot's own.
//
//   auto s = BatchedSession::make(model, 16, 2048);
//   auto logits = s->run({{slot 0, prompt}});              // a prompt: [1, vocab]
//   auto next = s->run({{0, {t0}}, {1, {t1}}, ...});       // one step each: [pieces, vocab]
#pragma once

#include <map>
#include <memory>
#include <span>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"

namespace arch {

class BatchedSession {
 public:
  struct Piece {
    int slot = 0;
    std::span<const int32_t> tokens;
  };

  // An error where the model's token graph cannot run several sequences
  // together: no token graph, state inputs under a mirror (engine/distributed), an op
  // keeping state other than kv_cache, an attention reading keys that are
  // not a KV cache's, an input with no default beyond tokens and positions.
  // `logits_here` false: a process that follows another and makes no logits
  // (a pipeline's later stage, engine/distributed): run() returns none.
  static Result<std::unique_ptr<BatchedSession>> make(const Model& m, int slots, int64_t context,
                                                      bool logits_here = true);

  // Runs each piece's tokens at its slot's position, advancing it, all in one
  // call; returns each piece's last row of logits, [pieces, vocab], in order.
  // A slot appears at most once; its position plus its tokens must fit the
  // context. A piece that takes its sequence past a length where the
  // model's earlier positions change (LongRoPE) runs its whole sequence.
  Result<Tensor> run(std::span<const Piece> pieces);
  // The slot's sequence is over: its region starts again from position 0
  // (and holds no state inputs).
  void release(int slot);
  // The state inputs (an encoder's output, by the token graph's held input
  // names) the slot's sequence runs with, from position 0. Slots given the
  // same tensors (one input's beams) share their rows and what is made
  // from them (the cross-attention's keys and values).
  Status hold(int slot, const NamedTensors& state);
  // The slot's sequence goes back to `position` (no further than it is):
  // its later rows are written again by the next pieces. An error where an
  // op keeps a recurrent state, which cannot go back.
  Status rewind(int slot, int64_t position);
  // Slot `to` takes slot `from`'s first `positions` (no further than it
  // is) and its state inputs: its KV rows copied, not computed again. An
  // error where an op keeps state that cannot be copied (a recurrent one),
  // `to` then holding nothing to go on from.
  Status copy(int from, int to, int64_t positions);
  ~BatchedSession();
  int64_t position(int slot) const { return positions_.at(size_t(slot)); }
  int slots() const { return int(positions_.size()); }
  int64_t context() const { return context_; }
  // The KV caches' bytes for every slot's positions and the recurrent
  // states' for every slot: what the first call makes resident
  // (kernels/reference/kv_cache.cpp, recurrent_state.cpp).
  int64_t cache_bytes() const;
  // Time every kernel call of the following runs into `profile` (null: stop).
  void profile_with(OpProfile* profile) { state_.profile = profile; }

 private:
  BatchedSession(const Model& m, const ModelGraph& g, int slots, int64_t context);
  std::unique_lock<std::recursive_mutex> tell(SessionCall call);  // Session::tell's, for this one
  const Model& m_;
  const ModelGraph& g_;
  int64_t context_;
  std::vector<int64_t> positions_;
  // Each slot's tokens so far, kept where the model recomputes its cache
  // at some length (ModelGraph::history_changes_past).
  std::vector<std::vector<int32_t>> history_;
  RunState state_;
  SequenceRows rows_;
  // Held inputs: each slot's (by input value id), every slot's rows one
  // after another as the graph takes them (rebuilt when a slot is given
  // new ones),
  // and the pieces as a step reading them sees them (SequenceRows::over_held).
  std::vector<std::map<int, Tensor>> held_;
  std::map<int, Tensor> held_rows_;
  bool held_changed_ = false;
  SequenceRows over_held_;
  Status gather_held();
  int tokens_input_ = -1, positions_input_ = -1;
  std::vector<int> logits_;  // the value ids a call keeps (looked up once)
  int64_t id_ = 0;           // as the mirror numbers it
};

}  // namespace arch

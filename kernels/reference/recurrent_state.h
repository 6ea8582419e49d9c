// The state a recurrent op keeps across the calls of one session: a fixed
// number of floats per sequence that does not grow with the positions (a
// causal convolution's last inputs, a delta rule's per-head matrix), where a
// KV cache keeps a row per position. A batched session's sequences each have
// a slot of it, as each has a region of the KV caches (SequenceRows).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/op.h"

namespace arch {

struct RecurrentState : OpState {
  Tensor values;               // [slots, per_slot] F32
  std::vector<int64_t> seen;   // per slot: the positions taken in so far
  int64_t per_slot = 0;

  float* slot(int64_t s) { return values.f32() + s * per_slot; }
  // The session's sequence (slot 0) only goes back to where it is, or to
  // the start: a recurrent state holds no earlier positions to return to
  // (a session keeps copies for that: Session::mark).
  bool can_rewind(int64_t positions) const override;
  void rewind(int64_t positions) override;
  std::unique_ptr<OpState> clone() const override;
};

// One run of rows of a call: the sequence in `slot`, rows [row, row + rows)
// of the call's inputs, continuing that sequence at `position`.
using StatePiece = SequenceRows::Piece;

// The op's RecurrentState with `per_slot` floats per sequence: made on the
// first call (zeros; one slot, or as many as the batched session's regions),
// checked on the later ones. Then the call's pieces: the batched session's,
// or every row as slot 0's, continuing where it is. A piece at position 0
// starts its sequence: its slot is zeroed first; any other piece must
// continue where its slot is; a slot appears in at most one piece.
struct StateCall {
  RecurrentState* state = nullptr;
  std::vector<StatePiece> pieces;
};
Result<StateCall> begin_state_call(KernelContext& ctx, const char* op, int64_t rows, int64_t per_slot);

// After the pieces ran: each slot's positions advanced by its rows.
void end_state_call(StateCall& call);

// Output `i` set to a view of the last piece's slot, shaped `dims` (the
// state after the call, for a template to return; it changes with the next call).
void view_state(KernelContext& ctx, size_t i, StateCall& call, Dims dims);

}  // namespace arch

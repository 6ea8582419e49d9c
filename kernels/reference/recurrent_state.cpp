#include "kernels/reference/recurrent_state.h"

#include <cstring>

#include "kernels/reference/shape_rules.h"

namespace arch {

bool RecurrentState::can_rewind(int64_t positions) const {
  // A batched session's slots go back to 0 by their pieces instead.
  return seen.size() == 1 && (positions == seen[0] || positions == 0);
}

void RecurrentState::rewind(int64_t positions) {
  if (positions == seen[0]) return;
  std::memset(values.data, 0, values.nbytes());
  seen[0] = 0;
}

std::unique_ptr<OpState> RecurrentState::clone() const {
  auto c = std::make_unique<RecurrentState>();
  c->values = Tensor::zeros(DType::F32, values.shape);
  std::memcpy(c->values.data, values.data, values.nbytes());
  c->seen = seen;
  c->per_slot = per_slot;
  return c;
}

Result<StateCall> begin_state_call(KernelContext& ctx, const char* op, int64_t rows, int64_t per_slot) {
  const SequenceRows* seqs = ctx.sequences;
  if (!ctx.state) {
    int64_t slots = 1;
    if (seqs) {
      if (seqs->slot_capacity <= 0 || ctx.max_context < seqs->slot_capacity)
        return kernel_error(ctx, op, "a batched call needs its sequences' regions (" +
                                         std::to_string(ctx.max_context) + " positions in regions of " +
                                         std::to_string(seqs->slot_capacity) + ")");
      slots = ctx.max_context / seqs->slot_capacity;
    }
    auto s = std::make_unique<RecurrentState>();
    s->per_slot = per_slot;
    s->values = Tensor::zeros(DType::F32, {slots, per_slot});
    s->seen.assign(size_t(slots), 0);
    ctx.state = std::move(s);
  }
  auto* s = dynamic_cast<RecurrentState*>(ctx.state.get());
  if (!s) return kernel_error(ctx, op, "this op's state is not a recurrent state");
  if (s->per_slot != per_slot)
    return kernel_error(ctx, op, "this call's state is " + std::to_string(per_slot) + " values a sequence; the " +
                                     "session's holds " + std::to_string(s->per_slot));
  StateCall call{s, {}};
  if (seqs) {
    call.pieces = seqs->pieces;
  } else {
    call.pieces.push_back({0, s->seen[0], 0, rows});
  }
  const int64_t slots = int64_t(s->seen.size());
  // One piece a sequence (as a batched session makes them): two would
  // continue one state from the same position, and the fast kernels run
  // pieces side by side.
  for (size_t i = 0; i < call.pieces.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (call.pieces[i].slot == call.pieces[j].slot)
        return kernel_error(ctx, op, "sequence slot " + std::to_string(call.pieces[i].slot) + " appears twice in one call");
  for (const StatePiece& p : call.pieces) {
    if (p.slot < 0 || p.slot >= slots || p.row < 0 || p.rows < 0 || p.row + p.rows > rows)
      return kernel_error(ctx, op, "sequence slot " + std::to_string(p.slot) + " rows [" + std::to_string(p.row) +
                                       ", +" + std::to_string(p.rows) + ") do not fit " + std::to_string(slots) +
                                       " slots and " + std::to_string(rows) + " rows");
    if (p.position == 0) {
      std::memset(s->slot(p.slot), 0, size_t(per_slot) * sizeof(float));
      s->seen[size_t(p.slot)] = 0;
    } else if (p.position != s->seen[size_t(p.slot)]) {
      return kernel_error(ctx, op, "sequence slot " + std::to_string(p.slot) + " continues at position " +
                                       std::to_string(p.position) + ", but its state has taken in " +
                                       std::to_string(s->seen[size_t(p.slot)]) +
                                       " (a recurrent state cannot go back but to the start)");
    }
  }
  return call;
}

void end_state_call(StateCall& call) {
  for (const StatePiece& p : call.pieces) call.state->seen[size_t(p.slot)] += p.rows;
}

void view_state(KernelContext& ctx, size_t i, StateCall& call, Dims dims) {
  const int64_t slot = call.pieces.empty() ? 0 : call.pieces.back().slot;
  Tensor& out = ctx.outputs[i];
  out.dtype = DType::F32;
  out.shape.assign(dims.begin(), dims.end());
  out.data = call.state->slot(slot);
  out.owner = call.state->values.owner;
  out.mapped = false;
}

}  // namespace arch

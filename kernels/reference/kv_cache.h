// The state the kv_cache op keeps across the calls of one session: every key
// and value row seen so far, in buffers sized once to max_context. The op's
// outputs are views of rows [0, len) of these buffers (their `owner` keeps
// the buffers alive).
#pragma once

#include <cstdint>

#include "engine/core/op.h"

namespace arch {

struct KvCache : OpState {
  Tensor k;         // [capacity, KH, D]
  Tensor v;         // [capacity, KH, Dv]; empty where the keys are the values too
  int64_t len = 0;  // rows [0, len) hold the positions seen so far

  int64_t capacity() const { return k.shape.empty() ? 0 : k.shape[0]; }
  bool can_rewind(int64_t positions) const override { return positions >= 0 && positions <= len; }
  void rewind(int64_t positions) override { len = positions; }
  bool copy_rows(int64_t from, int64_t to, int64_t n) override;
};

// n F32 values rounded to F16 (to nearest even, as f32_to_f16).
using RoundToF16 = void (*)(const float* in, int64_t n, uint16_t* out);

// The kv_cache kernel with its rows kept as `storage`: F32 (the reference
// kernel), or F16 (the cpu backend on a model loaded with kv_f16: half the
// memory, rows rounded to F16 by `to_f16`, f32_to_f16 value by value where
// null; its outputs are then F16 views, which the cpu attention reads).
Status kv_cache_append(KernelContext& ctx, DType storage, RoundToF16 to_f16 = nullptr);

// Attention over several sequences' rows (ctx.sequences set): `one` (a
// single sequence's attention kernel) run per piece, on its query rows and
// its slot's region of the cache, rows [0, position + rows) of it; the
// pieces' outputs are rows of the call's output. The cache is the whole of
// every region, as the batched kv_cache returns it. Over held keys
// (ctx.sequences->over_held: cross-attention over each sequence's encoder
// output) a piece reads its slot's held rows, unmasked. `across_threads`: where
// every piece is a decode step's few rows, the pieces are shared out over
// the threads, each running `one` alone (its own parallel regions nested,
// so inactive), instead of each piece waking every thread for a few
// microseconds of work (16 sequences x 24 layers: 384 such wakes a step).
Status attention_per_sequence(KernelContext& ctx, const Kernel& one, bool across_threads = false);

}  // namespace arch

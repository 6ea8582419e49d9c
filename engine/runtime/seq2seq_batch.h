// Several inputs of an encoder-decoder decoded together: each input's
// encoder once, then every input's decoder steps in one call of a batched
// session (engine/runtime/batched_session.h), the weights read once a step
// for all of them. An input has a slot per hypothesis (one greedy, the
// plan's beams otherwise) and takes the slots another has finished with, so
// a long input does not hold the short ones back. Each input's tokens are
// those seq2seq_generate gives it alone (the same search, its steps' logits
// equal up to float rounding).
//
//   seq2seq_generate_batch(model, plan, 8,
//       [&](bool idle) { return next line's ids, or none; },
//       [&](size_t k, Seq2SeqResult r) { input k's answer; });
#pragma once

#include <cstddef>
#include <functional>
#include <optional>

#include "engine/runtime/seq2seq.h"

namespace arch {

// The next input's ids, special tokens included, or none: none now (while
// `idle` is false, other inputs are still being decoded: it should not
// wait), or no more (while `idle` is true: nothing is in flight).
using NextInput = std::function<Result<std::optional<std::vector<int32_t>>>(bool idle)>;
// Input k's result (k counts the inputs from 0 in the order given), as it
// finishes: not in order.
using InputDone = std::function<Status(size_t k, Seq2SeqResult result)>;

// `batch`: how many inputs at most are decoded together. An error where
// the model's decoder cannot run several sequences in one call
// (BatchedSession::make's reason), before any input is asked for.
Status seq2seq_generate_batch(const Model& m, const Seq2SeqPlan& plan, int batch, const NextInput& next_input,
                              const InputDone& done);

}  // namespace arch

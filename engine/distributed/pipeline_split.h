// Pipeline parallelism, derived from the instantiated graph: process s of
// S holds consecutive layers (the template's layer loop, `layers.{i}`,
// split evenly), and the hidden state goes round a ring: process 0 embeds
// and runs its layers, each next process its own, and the last hands the
// state back to process 0, which runs what follows the loop (the final
// norm, the head), so the logits are made where they are wanted and the
// last-row shortcut still applies. Every value a later stage reads is
// sent on at each hop (recv/send ops); what depends on the inputs alone
// (rotary tables, masks) is computed again where it is read rather than
// sent. Each process binds only its layers' weights.
#pragma once

#include "engine/core/graph.h"
#include "engine/core/op.h"

namespace arch {

struct PipelineSplitReport {
  int64_t layers = 0;            // in the loop
  int64_t first = 0, last = 0;   // this process's [first, last)
  int sent = 0, received = 0;    // values per run
};

// Process `rank`'s stage of `g` over `ranks` processes. An error where the
// graph has no layer loop, or a value crossing stages is not made of rows
// (its first dim the call's `seq`).
Result<Graph> split_pipeline(const Graph& g, const OpTable& ops, int rank, int ranks,
                             PipelineSplitReport* report = nullptr);

}  // namespace arch

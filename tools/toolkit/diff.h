// Two versions of a template, compared on one checkpoint: what changed in
// the graph (aligned by the names values carry, not by position), and how
// far each value's numbers moved.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/runtime/model.h"

namespace arch {

struct GraphChange {
  enum Kind { Added, Removed, Changed } kind = Changed;
  std::string value;   // layers.3.attn_norm
  std::string detail;  // "rope theta 10000.0 -> 20000.0", "op rms_norm -> layer_norm"
};

// Structural difference: values only one graph has, and values whose op,
// attributes, inputs (by name), shape or bound tensor differ.
std::vector<GraphChange> diff_graphs(const Graph& old_graph, const Graph& new_graph);

struct ValueChange {
  std::string value;
  double max_abs = 0;   // max |new - old|
  double rel = 0;       // max_abs / max |old|
  double bound = 0;     // the op's tolerance on old's values
  bool within() const { return max_abs <= bound; }
};

struct NumericDiff {
  std::vector<ValueChange> values;     // every aligned value with the same shape, in old's order
  std::vector<ValueChange> outputs;    // the graph outputs
  std::string first_beyond;            // the first value past its op's tolerance ("" if none)
  int greedy_total = 0, greedy_agree = 0;  // decoders: greedy tokens agreeing
};

// Runs both models on the same inputs (forward()'s names) and compares
// every value both graphs name alike.
Result<NumericDiff> diff_runs(const Model& old_model, const Model& new_model,
                              const std::map<std::string, Tensor>& inputs, int greedy_tokens = 16);

}  // namespace arch

// The planner: rewrites a template's graph for a fast backend, on the IR
// alone (never on a family by name), before the program is made.
//
// Sibling projections: matmuls that read the same activations with weights
// of one stored type and width (Q, K and V; gate and up) become one matmul
// over their weights concatenated at load, followed by a slice per original
// output. One pass over the activations and one thread fork instead of
// three, and a wider N for oneDNN's blocking; the slices' outputs keep the
// original value ids, so everything downstream (outputs, --check, names)
// is unchanged.
//
// Adds after a matmul: a bias or a residual added to a matmul's output (and
// nothing else reading that output) becomes the matmul's optional third
// input, which its kernels add in place. So do the biases added to a merged
// projection's slices (Qwen's q, k and v), concatenated.
//
// Gated activations: mul(act(gate), up) becomes one glu op, which reads a
// merged gate/up projection's halves in place (no slices): one pass over
// the rows where there were four.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/op.h"
#include "engine/core/tensor.h"

namespace arch {

struct PlanStats {
  int merged_groups = 0;  // groups of sibling matmuls fused into one
  int merged_nodes = 0;   // matmuls those groups replaced
  int folded_adds = 0;    // adds folded into the matmul before them
  int fused_glus = 0;     // mul(act(gate), up) made one glu, slices read in place
  int fused_activations = 0;  // act(matmul) made the matmul's `activation`; leaky_relu(conv1d) the conv's
};

// `weights` by value id (as bound); returns the rewritten graph, its weights
// (the concatenated ones appended) and what was done.
struct Plan {
  std::shared_ptr<Graph> graph;
  std::vector<Tensor> weights;
  PlanStats stats;
};

Plan plan_graph(const Graph& g, std::vector<Tensor> weights, const OpTable& ops, const std::string& backend);

// Only the last position of graph output `output` (generation needs the
// next token's logits, not every prompt position's): walks back from the
// output through ops that work row by row (a matmul by a weight, norms,
// activations, arithmetic with weights or constants) to where the value is
// also used elsewhere, and slices the last row there. The rest of the
// graph is unchanged. `origin[n]` is the node of `g` each node of the result
// copies (-1 for the slice), so per-node state (KV caches) lines up.
// Null when the output is not reached through such ops.
std::shared_ptr<Graph> last_row_graph(const Graph& g, const std::vector<Tensor>& weights, const std::string& output,
                                      std::vector<int>& origin);

}  // namespace arch

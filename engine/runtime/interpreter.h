// The interpreter: runs a graph's nodes in order with one backend's kernels
// (the reference ones where the backend has none), freeing each value after
// its last reader.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/runtime/buffer_pool.h"
#include "engine/core/graph.h"
#include "engine/core/op.h"
#include "engine/runtime/planner.h"

namespace arch {

// One node of a program: its kernel and what the walk needs to know of it.
struct Step {
  const Kernel* kernel = nullptr;
  const OpDef* def = nullptr;
  bool view = false;         // the kernel aliases its input: allocate nothing
  bool fills = false;        // the kernel writes every output element: no zeroing
  bool folded = false;       // computed once at load (reads only weights and constants)
  bool per_session = false;  // computed once per session: reads only weights, constants,
                             // held inputs and other such steps (cross-attention K/V)
  bool reads_held = false;   // an input is a held input or a per-session step's output
  bool dynamic = false;      // an output has a `_` dim: its shape is worked out per call
  int state_slot = -1;       // its slot in RunState::states (its own index unless the
                             // program was derived from another whose state it shares)
};

// A graph with its weights bound and kernels chosen, ready to run.
struct Program {
  const Graph* graph = nullptr;       // the template's, or the planner's rewrite of it (owned_graph)
  std::shared_ptr<const Graph> owned_graph;
  PlanStats plan;
  std::vector<Step> steps;            // by node
  std::vector<Tensor> weights;        // by value id; empty where the value is not a weight
  std::vector<int> last_use;          // by value: the last node reading it (-1: none)
  std::vector<char> held;             // by value: a held input or a per-session step's output
  KernelOptions options;              // how its kernels compute (the model's load options)
  std::string backend = "reference";
};

// Weights a model's programs prepared at load (widened to F32, put in a
// backend's layout), keyed by the stored tensor and the form made: a weight
// two graphs read is prepared once and shared.
struct PreparedWeights {
  std::map<std::tuple<const void*, DType, uint8_t>, Tensor> made;
};

// Chooses each node's kernel for `backend`, works out value lifetimes, and
// folds what depends only on weights and constants (a template's `w + 1` on
// a norm weight, a stack of expert weights) into weights, computed once here
// rather than per call: load-time fix-ups are written in the template.
// `plan`: on a backend other than reference, first let the planner rewrite
// the graph (engine/runtime/planner.h).
// `prepared`: shared with the model's other programs (null: this one's alone).
Result<Program> make_program(const Graph& g, const OpTable& ops, std::vector<Tensor> weights,
                             const std::string& backend = "reference", bool plan = true,
                             const KernelOptions& options = {}, PreparedWeights* prepared = nullptr);

// One session's per-op state (KV caches), sized once.
// What --check saw (seeds/002's check=True): each step that ran a fast
// kernel, compared with its op's reference kernel on the same inputs.
struct CheckStats {
  int64_t checked = 0;   // steps compared, within tolerance
  int64_t skipped = 0;   // steps that ran the reference kernel itself: nothing to compare
  int64_t stateful = 0;  // fast steps of stateful ops not re-run (a KV cache: copying it to re-run would cost
                         // the whole cache; recurrent states are copied and checked)
};

// Where the time went, per op (archrun bench --profile), and per block of
// a layer (a value named layers.3.self_attention.x was made in the
// self_attention block, the innermost one around it): a hybrid's layer
// kinds side by side.
struct OpProfile {
  struct Entry {
    double seconds = 0;
    int64_t calls = 0;
  };
  std::map<std::string, Entry> by_op;
  std::map<std::string, Entry> by_block;
  // Each graph's nodes' by_block entries (null: outside a loop), worked out
  // on a graph's first profiled run rather than a name parsed a kernel call.
  std::map<const void*, std::vector<Entry*>> block_of_node;
};

// The block of a layer a value was made in: the name's segment after the
// loop index ("layers.3.self_attention.x#2" -> "self_attention"); "" for
// values outside a loop.
std::string layer_block_of(const std::string& value_name);

struct RunState {
  std::vector<std::unique_ptr<OpState>> states;  // by node
  // Held inputs (as last given) and per-session steps' outputs, by value id;
  // `held_ready`: the steps were computed from the inputs held now.
  std::vector<Tensor> held;
  bool held_ready = false;
  int64_t max_context = 0;
  CheckStats* check = nullptr;  // set: check every fast step, stop at the first miss
  const OpTable* ops = nullptr; // where the reference kernels are (needed by check)
  OpProfile* profile = nullptr; // set: time every kernel call
  const SequenceRows* sequences = nullptr;  // set: the rows are several sequences' (engine/runtime/batched_session.h)
  const SequenceRows* held_sequences = nullptr;  // the same, as a step reading held values sees them (over_held)
  std::shared_ptr<BufferPool> buffers = BufferPool::make();  // outputs recycled across nodes and steps
  // The walk's slots, kept from call to call (released, shapes' storage
  // kept): a decode step then allocates nothing per node.
  std::vector<Tensor> values, node_inputs;           // node_inputs: never shrunk
  std::vector<std::vector<Tensor>> node_outputs;     // by output count
  std::vector<std::vector<TypedShape>> node_types;   // likewise
  std::vector<char> kept;
};

// Runs the graph once. `inputs` are by graph input value id (a held input
// may be left out once given: the state keeps it); `dims` has the run-time
// dims the inputs do not bring: `seq`, the token count, and `ctx`, the
// positions the KV caches hold after this call (position + seq); named
// dims are bound from the inputs. The values named in `keep` are returned
// by id.
Result<std::map<int, Tensor>> run_program(const Program& p, RunState& state,
                                          const std::map<int, Tensor>& inputs, DimValues dims,
                                          const std::vector<int>& keep);
inline Result<std::map<int, Tensor>> run_program(const Program& p, RunState& state,
                                                 const std::map<int, Tensor>& inputs, int64_t seq, int64_t ctx,
                                                 const std::vector<int>& keep) {
  return run_program(p, state, inputs, DimValues(seq, ctx), keep);
}

}  // namespace arch

#include "engine/runtime/interpreter.h"

#include "engine/runtime/load_progress.h"
#include "engine/runtime/planner.h"
#include "engine/core/quant.h"
#include "engine/core/weight_arena.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

namespace arch {

namespace {

// A stored weight in the form (`dtype`, `layout`), from `prepared` where
// another program of the model made it already.
template <typename Make>
Tensor prepare(const Tensor& stored, DType dtype, uint8_t layout, PreparedWeights* prepared, Make make) {
  const auto key = std::make_tuple(static_cast<const void*>(stored.data), dtype, layout);
  if (prepared) {
    auto it = prepared->made.find(key);
    if (it != prepared->made.end()) return it->second;
  }
  Tensor t = make(stored);
  weights_read(int64_t(stored.nbytes()));
  release_pages(stored);  // read once, not again
  if (prepared) prepared->made[key] = t;
  return t;
}

// A weight all of whose readers' kernels ask for one layout of the
// backend's (the cpu's tiles of interleaved rows; a reader that takes any
// agrees with the rest) is rearranged into it once, here; one they all ask
// to have resident (kResidentRows) is copied out of the mapped file.
void prepare_layouts(const Graph& g, const OpTable& ops, const std::string& backend, std::vector<Tensor>& weights,
                     PreparedWeights* prepared) {
  std::vector<int> verdict(g.values.size(), -1);  // -1: no reader asked yet; 0: rows; else the layout
  for (const Node& node : g.nodes)
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int in = node.inputs[i];
      if (in < 0 || !weights[size_t(in)].data) continue;
      const uint8_t want = ops.weight_layout_for(node.op, backend, node.attrs, i, weights[size_t(in)]);
      if (want == kAnyLayout) continue;
      int& v = verdict[size_t(in)];
      v = (v == -1 || v == want) ? want : 0;
    }
  for (const GraphOutput& o : g.outputs) verdict[size_t(o.value)] = 0;
  for (size_t v = 0; v < verdict.size(); ++v) {
    if (verdict[v] <= 0) continue;
    if (verdict[v] == kResidentRows) {
      weights[v] = prepare(weights[v], weights[v].dtype, kResidentRows, prepared, weight_copy);
      continue;
    }
    const WeightLayout* layout = weight_layout(uint8_t(verdict[v]));
    if (!layout) continue;
    weights[v] = prepare(weights[v], weights[v].dtype, uint8_t(verdict[v]), prepared,
                         [&](const Tensor& w) { return layout->make({&w}); });
  }
}

// A value folded at load by moving weights' values only (DeepSeek's
// per-head matrices: kv_b_proj reshaped, sliced, transposed) was widened to
// F32 on the way, and decode would read twice the bytes the checkpoint
// holds. Where every kernel reading it takes the stored type, it is kept
// so: BF16 and F16 exactly; from a 4-to-6-bit block type, as BF16 (a
// rounding 2^-9 of each value, far under the block's own step; a block
// type cannot follow a transpose, whose blocks would cross its rows).
void narrow_folded(const Graph& g, const OpTable& ops, const std::string& backend, Program& p,
                   const std::vector<DType>& stored) {
  auto target = [](DType from) {
    switch (from) {
      case DType::BF16:
      case DType::F16: return from;
      case DType::Q4_0:
      case DType::Q4_K:
      case DType::Q5_K:
      case DType::Q6_K: return DType::BF16;
      default: return DType::F32;
    }
  };
  std::vector<char> keep(g.values.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (p.steps[n].folded)
      for (int o : g.nodes[n].outputs)
        keep[size_t(o)] = p.weights[size_t(o)].dtype == DType::F32 && target(stored[size_t(o)]) != DType::F32;
  for (const GraphOutput& o : g.outputs) keep[size_t(o.value)] = 0;
  std::vector<char> read(g.values.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    if (p.steps[n].folded) continue;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int in = node.inputs[i];
      if (in < 0 || !keep[size_t(in)]) continue;
      read[size_t(in)] = 1;
      keep[size_t(in)] = ops.takes_stored(node.op, backend, node.attrs, i, target(stored[size_t(in)]));
    }
  }
  for (size_t v = 0; v < keep.size(); ++v)
    if (keep[v] && read[v]) p.weights[v] = convert_to(p.weights[v], target(stored[v]));
}

}  // namespace

Result<Program> make_program(const Graph& source, const OpTable& ops, std::vector<Tensor> weights,
                             const std::string& backend, bool plan, const KernelOptions& options,
                             PreparedWeights* prepared) {
  Program p;
  p.graph = &source;
  p.options = options;
  if (plan && backend != "reference") {  // the reference path runs the template's graph as written
    Plan plan = plan_graph(source, std::move(weights), ops, backend);
    p.owned_graph = std::move(plan.graph);
    p.graph = p.owned_graph.get();
    p.plan = plan.stats;
    weights = std::move(plan.weights);
  }
  const Graph& g = *p.graph;
  p.backend = backend;
  p.weights = std::move(weights);
  p.weights.resize(g.values.size());
  p.last_use.assign(g.values.size(), -1);
  p.held.assign(g.values.size(), 0);
  for (int v : g.held_inputs) p.held[size_t(v)] = 1;
  // Weights stay as stored (mapped, not copied) where every reader's kernel
  // reads that type; the rest are widened to F32 once, here.
  std::vector<char> widen(g.values.size(), 0);
  std::vector<DType> stored(g.values.size(), DType::F32);  // each weight's type before widening
  for (size_t v = 0; v < p.weights.size(); ++v)
    if (p.weights[v].data) stored[v] = p.weights[v].dtype;
  for (const Node& node : g.nodes)
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      int in = node.inputs[i];
      if (in >= 0 && p.weights[in].data && !ops.takes_stored(node.op, backend, node.attrs, i, p.weights[in].dtype))
        widen[in] = 1;
    }
  for (size_t v = 0; v < widen.size(); ++v)
    if (widen[v]) p.weights[v] = prepare(p.weights[v], DType::F32, 0, prepared, to_f32);
  prepare_layouts(g, ops, backend, p.weights, prepared);
  std::vector<std::unique_ptr<OpState>> no_state(1);
  // The last node reading each value: a mapped weight a folded node read
  // last gives its pages back as soon as that node ran (512 experts'
  // stacks a layer would otherwise keep the file's pages and their copies
  // resident together until the end: twice the weights at the peak).
  std::vector<int> last_reader(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int in : g.nodes[n].inputs)
      if (in >= 0) last_reader[size_t(in)] = int(n);
  for (const GraphOutput& o : g.outputs) last_reader[size_t(o.value)] = int(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    Step step;
    step.kernel = ops.kernel(node.op, backend);
    step.def = ops.find(node.op);
    if (!step.kernel || !step.def) return error("no kernel for op '" + node.op + "' (" + backend + ")");
    const OpDef* def = step.def;
    step.view = def->view;
    step.fills = ops.fills_outputs(node.op, backend);
    for (int o : node.outputs) step.dynamic = step.dynamic || has_dyn(g.values[o].type.shape);
    step.state_slot = int(n);
    bool already = !node.outputs.empty();  // folded by the program this one derives from
    for (int o : node.outputs) already = already && p.weights[o].data;
    if (already) {
      step.folded = true;
      p.steps.push_back(step);
      continue;
    }
    bool foldable = !def->stateful, per_session = !def->stateful, reads_held = false;
    for (int in : node.inputs) {
      const bool weight = in < 0 || p.weights[in].data;
      foldable = foldable && weight;
      per_session = per_session && (weight || p.held[size_t(in)]);
      reads_held = reads_held || (in >= 0 && p.held[size_t(in)]);
    }
    for (int o : node.outputs) foldable = foldable && is_concrete(g.values[o].type.shape);
    step.folded = foldable;
    step.per_session = !foldable && per_session && reads_held;
    step.reads_held = reads_held;
    if (step.per_session)
      for (int o : node.outputs) p.held[size_t(o)] = 1;
    p.steps.push_back(step);
    if (!foldable) {
      for (int in : node.inputs)
        if (in >= 0) p.last_use[in] = int(n);
      continue;
    }
    std::vector<Tensor> ins, outs;
    for (int in : node.inputs) ins.push_back(in < 0 ? Tensor{} : p.weights[in]);
    for (int o : node.outputs) {
      Dims dims = concretize(g.values[o].type.shape, 0);
      outs.push_back(def->view ? Tensor{g.values[o].type.dtype, dims, nullptr, nullptr}
                               : Tensor::zeros(g.values[o].type.dtype, dims));
    }
    KernelContext ctx{node.attrs, ins, outs, no_state[0], 0, g.values[node.outputs[0]].name, &p.options};
    Status st = (*step.kernel)(ctx);
    if (!st.ok()) return error(g.values[node.outputs[0]].name + " (" + node.op + ", at load): " + st.error().message);
    for (size_t i = 0; i < outs.size(); ++i) p.weights[node.outputs[i]] = std::move(outs[i]);
    if (def->moves_values) {  // the values keep the type they were stored in (see below)
      DType from = DType::F32;
      bool one_type = true, first = true;
      for (int in : node.inputs)
        if (in >= 0) {
          one_type = one_type && (first || stored[size_t(in)] == from);
          from = stored[size_t(in)];
          first = false;
        }
      if (one_type)
        for (int o : node.outputs) stored[size_t(o)] = from;
    }
    for (int in : node.inputs)
      if (in >= 0 && last_reader[size_t(in)] == int(n) && !def->view) release_pages(p.weights[in]);
  }
  narrow_folded(g, ops, backend, p, stored);
  // Peak memory is the weights once, not twice. A weight no node reads any
  // more (the planner concatenated it into another) is dropped and its
  // mapped pages given back. One only folded nodes read (a stack of
  // experts, a norm weight turned into w + 1) gives its pages back but stays
  // bound (they return from the file if touched), since a program derived
  // from this one may still fold from it.
  std::vector<char> read(g.values.size(), 0), read_per_call(g.values.size(), 0);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int in : g.nodes[n].inputs)
      if (in >= 0) (p.steps[n].folded ? read : read_per_call)[size_t(in)] = 1;
  for (const GraphOutput& o : g.outputs) read_per_call[size_t(o.value)] = 1;
  for (size_t v = 0; v < read.size(); ++v) {
    if (read_per_call[v] || !p.weights[v].data) continue;
    release_pages(p.weights[v]);
    if (!read[v]) p.weights[v] = Tensor{};
  }
  return p;
}

// Re-runs step n with its op's reference kernel and compares every output
// within the op's tolerance: max|fast - ref| <= rel * max|ref| + abs.
// `before`: a stateful op's state as the fast kernel found it, copied, for
// the reference kernel to start from (`fresh`: there was none yet).
static Status check_step(const Program& p, RunState& state, size_t n, std::span<const Tensor> in,
                         const std::vector<Tensor>& fast, const std::vector<TypedShape>& types,
                         const DimValues& dims, int64_t max_context, std::unique_ptr<OpState> before,
                         bool fresh) {
  const Graph& g = *p.graph;
  const Node& node = g.nodes[n];
  const Kernel* reference = state.ops ? state.ops->kernel(node.op, "reference") : nullptr;
  if (!reference || reference == p.steps[n].kernel) {
    ++state.check->skipped;
    return {};
  }
  // A KV cache is not copied to check against: its rows are checked where
  // the attention reads them. A recurrent state is (OpDef::state_bytes).
  const bool stateful = p.steps[n].def->stateful;
  if (stateful && (!p.steps[n].def->state_bytes || (!fresh && !before))) {
    ++state.check->stateful;
    return {};
  }
  // The reference kernels read F32: widen what the fast one read as stored.
  std::vector<Tensor> ref_in;
  for (const Tensor& t : in)
    ref_in.push_back(t.data && (t.dtype == DType::BF16 || t.dtype == DType::F16 || is_block_quantized(t.dtype) || t.layout)
                         ? to_f32(t)
                         : t);
  std::vector<Tensor> ref;
  for (const auto& t : types) {
    Dims d = concretize(t.shape, dims);
    ref.push_back(p.steps[n].view ? Tensor{t.dtype, d, nullptr, nullptr} : Tensor::zeros(t.dtype, d));
  }
  KernelContext ctx{node.attrs, ref_in, ref, before, max_context, g.values[node.outputs[0]].name,
                    &p.options, stateful ? state.sequences : nullptr};
  ARCH_TRY_STATUS((*reference)(ctx));
  const Tolerance tol = state.ops->check_tolerance(node.op, p.backend, in);
  for (size_t k = 0; k < ref.size(); ++k) {
    if (fast[k].dtype != DType::F32 || ref[k].dtype != DType::F32 || fast[k].numel() != ref[k].numel()) continue;
    double max_ref = 0, max_err = 0;
    for (int64_t i = 0; i < ref[k].numel(); ++i) {
      max_ref = std::max(max_ref, double(std::abs(ref[k].f32()[i])));
      double e = std::abs(double(fast[k].f32()[i]) - double(ref[k].f32()[i]));
      if (!(e <= max_err)) max_err = std::isnan(e) ? INFINITY : e;
    }
    double bound = tol.rel * max_ref + tol.abs;
    if (!(max_err <= bound)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, ": max abs err %.3g > tol %.3g (%s, %s kernel vs reference)", max_err, bound,
                    node.op.c_str(), p.backend.c_str());
      return error(g.values[node.outputs[k]].name + buf);
    }
  }
  ++state.check->checked;
  return {};
}

namespace {

// Drops a slot's storage reference; its shape's storage stays for reuse.
void release(Tensor& t) {
  t.owner.reset();
  t.data = nullptr;
  t.mapped = false;
  t.layout = 0;
}

void release_all(RunState& state) {
  for (auto* slots : {&state.values, &state.node_inputs})
    for (Tensor& t : *slots) release(t);
  for (auto& slots : state.node_outputs)
    for (Tensor& t : slots) release(t);
}

// The inputs of this call, with the held ones it leaves out taken from the
// state (and those it gives kept there); the named dims bound from them.
// Returns whether the per-session steps must be computed (again).
Result<bool> take_inputs(const Program& p, RunState& state, const std::map<int, Tensor>& given, DimValues& dims) {
  const Graph& g = *p.graph;
  std::vector<Tensor>& vals = state.values;
  if (state.held.size() < g.values.size()) state.held.resize(g.values.size());
  bool recompute = !state.held_ready;
  auto take = [&](int id, const Tensor& t) -> Status {
    const Shape& declared = g.values[id].type.shape;
    if (t.shape.size() == declared.size())
      for (size_t d = 0; d < declared.size(); ++d)
        if (declared[d].is_named() && dims.get(declared[d].sym) < 0) dims.set(declared[d].sym, t.shape[d]);
    Dims want = concretize(declared, dims);
    for (size_t d = 0; d < want.size() && d < t.shape.size(); ++d)
      if (declared[d].sym == kDynSym) want[d] = t.shape[d];  // `_`: whatever this call brings
    if (t.shape != want || t.dtype != g.values[id].type.dtype)
      return error("input '" + g.values[id].name + "' is " + std::string(dtype_name(t.dtype)) + dims_str(t.shape) +
                   ", the graph takes " + std::string(dtype_name(g.values[id].type.dtype)) + shape_str(declared) +
                   " (here " + dims_str(want) + ")");
    return {};
  };
  for (int id : g.held_inputs) {
    auto it = given.find(id);
    if (it != given.end()) {
      const Tensor& held = state.held[size_t(id)];
      if (held.data != it->second.data || held.shape != it->second.shape || held.dtype != it->second.dtype)
        recompute = true;
      state.held[size_t(id)] = it->second;
    } else if (!state.held[size_t(id)].data) {
      // `= null`: the graph runs without it (a prompt with no image).
      if (g.may_be_absent(id)) continue;
      return error("input '" + g.values[id].name + "' is missing (the session holds it once it is given)");
    }
    ARCH_TRY_STATUS(take(id, state.held[size_t(id)]));
  }
  for (auto& [id, t] : given) {
    if (p.held[size_t(id)]) continue;
    ARCH_TRY_STATUS(take(id, t));
    vals[id] = t;
  }
  return recompute;
}

}  // namespace

std::string layer_block_of(const std::string& value_name) {
  const size_t first = value_name.find('.');
  if (first == std::string::npos) return "";
  const size_t second = value_name.find('.', first + 1);
  if (second == std::string::npos || second == first + 1) return "";
  for (size_t i = first + 1; i < second; ++i)
    if (value_name[i] < '0' || value_name[i] > '9') return "";
  const size_t end = value_name.find_first_of(".#", second + 1);
  return value_name.substr(second + 1, end == std::string::npos ? std::string::npos : end - second - 1);
}

Result<std::map<int, Tensor>> run_program(const Program& p, RunState& state,
                                          const std::map<int, Tensor>& inputs, DimValues dims,
                                          const std::vector<int>& keep) {
  const Graph& g = *p.graph;
  release_all(state);  // what an earlier call that failed midway still held
  std::vector<Tensor>& vals = state.values;
  if (vals.size() < g.values.size()) vals.resize(g.values.size());
  ARCH_TRY(const bool compute_held, take_inputs(p, state, inputs, dims));
  state.held_ready = false;  // until the walk has computed them
  // With a profile, the time between kernels (inputs gathered, outputs
  // allocated, values freed) is an entry of its own.
  const auto walk_started = state.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  double in_kernels = 0;
  std::vector<char>& kept = state.kept;
  kept.assign(g.values.size(), 0);
  for (int id : keep) kept[size_t(id)] = 1;
  for (const Step& step : p.steps)
    if (state.states.size() <= size_t(step.state_slot)) state.states.resize(size_t(step.state_slot) + 1);
  // Slots reused from node to node and call to call: a decode step walks
  // some 400 nodes, and allocating their shapes alone cost thousands of heap
  // allocations a token.
  std::vector<Tensor>& in_buf = state.node_inputs;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Step& step = p.steps[n];
    if (step.folded || (step.per_session && !compute_held)) continue;
    const Node& node = g.nodes[n];
    const size_t n_in = node.inputs.size(), n_out = node.outputs.size();
    if (in_buf.size() < n_in) in_buf.resize(n_in);
    if (state.node_outputs.size() <= n_out) state.node_outputs.resize(n_out + 1);
    if (state.node_types.size() <= n_out) state.node_types.resize(n_out + 1);
    std::vector<Tensor>& outs = state.node_outputs[n_out];
    std::vector<TypedShape>& types = state.node_types[n_out];
    const std::span<const Tensor> ins(in_buf.data(), n_in);
    for (size_t i = 0; i < n_in; ++i) {
      const int in = node.inputs[i];
      if (in < 0) release(in_buf[i]);
      else in_buf[i] = p.weights[in].data ? p.weights[in] : p.held[size_t(in)] ? state.held[size_t(in)] : vals[in];
    }
    // Output shapes: from the IR, or where a dim is `_`, from the op's shape
    // rule over this call's concrete inputs (its values, for an op whose
    // output size depends on them).
    types.resize(node.outputs.size());
    for (size_t k = 0; k < node.outputs.size(); ++k) types[k] = g.values[node.outputs[k]].type;
    if (step.dynamic && step.def->value_shape) {
      auto r = step.def->value_shape(ins, node.attrs);
      if (!r.ok()) return error(g.values[node.outputs[0]].name + " (" + node.op + "): " + r.error().message);
      types = std::move(r.value());
    } else if (step.dynamic) {
      std::vector<TypedShape> in_types;
      std::unique_ptr<bool[]> present(new bool[n_in]);
      for (size_t i = 0; i < n_in; ++i) {
        // A weight kept as stored (BF16, Q8_0) still has its declared type.
        int v = node.inputs[i];
        DType dt = v >= 0 && p.weights[v].data ? g.values[v].type.dtype : in_buf[i].dtype;
        in_types.push_back({dt, shape_of(in_buf[i].shape)});
        present[i] = in_buf[i].data != nullptr;
      }
      auto r = step.def->shape(in_types, std::span<const bool>(present.get(), n_in), node.attrs);
      if (!r.ok()) return error(g.values[node.outputs[0]].name + " (" + node.op + "): " + r.error().message);
      types = std::move(r.value());
    }
    outs.resize(types.size());
    for (size_t k = 0; k < types.size(); ++k) {
      Tensor& o = outs[k];
      release(o);
      o.dtype = types[k].dtype;
      // Slots trade shapes' storage as values move in and out of them; room
      // for any rank a template uses stops that from reallocating.
      if (o.shape.capacity() < 8) o.shape.reserve(8);
      concretize_into(types[k].shape, dims, o.shape);
      if (!step.view) state.buffers->lease(o, !step.fills);
    }
    KernelContext kctx{node.attrs, ins, outs, state.states[size_t(step.state_slot)], state.max_context,
                       g.values[node.outputs[0]].name, &p.options,
                       step.reads_held && state.held_sequences ? state.held_sequences : state.sequences};
    std::unique_ptr<OpState> before;  // --check: the state the fast kernel starts from
    const bool fresh = !kctx.state;
    if (state.check && step.def && step.def->state_bytes && !fresh) before = kctx.state->clone();
    auto started = state.profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    Status st = (*step.kernel)(kctx);
    if (!st.ok()) {
      // The op and what it read, by name: "embed of model.decoder.embed_positions.weight, positions".
      std::string read;
      for (int v : node.inputs)
        if (v >= 0) read += (read.empty() ? " of " : ", ") + g.values[size_t(v)].name;
      return error(g.values[node.outputs[0]].name + " (" + node.op + read + "): " + st.error().message);
    }
    if (state.profile) {
      auto& e = state.profile->by_op[node.op];
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      e.seconds += seconds;
      in_kernels += seconds;
      ++e.calls;
      auto [blocks, fresh] = state.profile->block_of_node.try_emplace(&g);
      if (fresh)
        for (const Node& each : g.nodes) {
          const std::string block = layer_block_of(g.values[size_t(each.outputs[0])].name);
          blocks->second.push_back(block.empty() ? nullptr : &state.profile->by_block[block]);
        }
      if (OpProfile::Entry* b = blocks->second[n]) b->seconds += seconds, ++b->calls;
    }
    if (state.check)
      ARCH_TRY_STATUS(check_step(p, state, n, ins, outs, types, dims, kctx.max_context, std::move(before), fresh));
    // Swapped, not moved: the slot taken back keeps its shape's storage.
    // A per-session step's outputs stay in the state for the calls after.
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      if (step.per_session) state.held[size_t(node.outputs[k])] = outs[k];
      else std::swap(vals[node.outputs[k]], outs[k]);
      release(outs[k]);
    }
    // Free what no later node reads.
    for (int in : node.inputs)
      if (in >= 0 && p.last_use[in] == int(n) && !kept[size_t(in)]) release(vals[in]);
  }
  state.held_ready = true;
  std::map<int, Tensor> out;
  for (int id : keep) out[id] = p.weights[id].data ? p.weights[id] : p.held[size_t(id)] ? state.held[size_t(id)] : vals[id];
  release_all(state);
  if (state.profile) {
    auto& e = state.profile->by_op["(between kernels)"];
    e.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - walk_started).count() - in_kernels;
    ++e.calls;
  }
  return out;
}

}  // namespace arch

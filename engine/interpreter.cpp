#include "engine/interpreter.h"

#include <set>

namespace arch {

Result<Program> make_program(const Graph& g, const OpTable& ops, std::vector<Tensor> weights,
                             const std::string& backend) {
  Program p;
  p.graph = &g;
  p.backend = backend;
  p.weights = std::move(weights);
  p.weights.resize(g.values.size());
  p.last_use.assign(g.values.size(), -1);
  std::vector<std::unique_ptr<OpState>> no_state(1);
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const Kernel* k = ops.kernel(node.op, backend);
    const OpDef* def = ops.find(node.op);
    if (!k || !def) return error("no kernel for op '" + node.op + "' (" + backend + ")");
    p.kernels.push_back(k);
    p.views.push_back(def->view);
    bool foldable = !def->stateful;
    for (int in : node.inputs) foldable = foldable && (in < 0 || p.weights[in].data);
    for (int o : node.outputs) foldable = foldable && is_concrete(g.values[o].type.shape);
    p.folded.push_back(foldable);
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
    KernelContext ctx{node.attrs, ins, outs, no_state[0], 0, g.values[node.outputs[0]].name};
    Status st = (*k)(ctx);
    if (!st.ok()) return error(g.values[node.outputs[0]].name + " (" + node.op + ", at load): " + st.error().message);
    for (size_t i = 0; i < outs.size(); ++i) p.weights[node.outputs[i]] = std::move(outs[i]);
  }
  return p;
}

Result<std::map<int, Tensor>> run_program(const Program& p, RunState& state,
                                          const std::map<int, Tensor>& inputs, int64_t seq,
                                          int64_t ctx, const std::vector<int>& keep) {
  const Graph& g = *p.graph;
  std::vector<Tensor> vals(g.values.size());
  for (auto& [id, t] : inputs) {
    Dims want = concretize(g.values[id].type.shape, seq, ctx);
    if (t.shape != want || t.dtype != g.values[id].type.dtype)
      return error("input '" + g.values[id].name + "' is " + std::string(dtype_name(t.dtype)) +
                   dims_str(t.shape) + ", the graph takes " +
                   std::string(dtype_name(g.values[id].type.dtype)) + dims_str(want));
    vals[id] = t;
  }
  std::set<int> kept(keep.begin(), keep.end());
  if (state.states.size() < g.nodes.size()) state.states.resize(g.nodes.size());
  std::vector<Tensor> in_buf;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    if (p.folded[n]) continue;
    const Node& node = g.nodes[n];
    in_buf.clear();
    for (int in : node.inputs) {
      if (in < 0) in_buf.emplace_back();
      else in_buf.push_back(p.weights[in].data ? p.weights[in] : vals[in]);
    }
    std::vector<Tensor> outs;
    for (int o : node.outputs) {
      const Value& v = g.values[o];
      Dims dims = concretize(v.type.shape, seq, ctx);
      outs.push_back(p.views[n] ? Tensor{v.type.dtype, dims, nullptr, nullptr}
                                : Tensor::zeros(v.type.dtype, dims));
    }
    KernelContext ctx{node.attrs, in_buf, outs, state.states[n], state.max_context,
                      g.values[node.outputs[0]].name};
    Status st = (*p.kernels[n])(ctx);
    if (!st.ok()) return error(g.values[node.outputs[0]].name + " (" + node.op + "): " + st.error().message);
    for (size_t k = 0; k < node.outputs.size(); ++k) vals[node.outputs[k]] = std::move(outs[k]);
    // Free what no later node reads.
    for (int in : node.inputs)
      if (in >= 0 && p.last_use[in] == int(n) && !kept.count(in)) vals[in] = Tensor{};
  }
  std::map<int, Tensor> out;
  for (int id : keep) out[id] = p.weights[id].data ? p.weights[id] : vals[id];
  return out;
}

}  // namespace arch

#include "engine/planner.h"

#include <cstring>
#include <map>

namespace arch {

namespace {

// A matmul whose weight is bound, stored [N, K], and read by the backend as stored.
bool mergeable(const Graph& g, const Node& n, const std::vector<Tensor>& weights, const OpTable& ops,
               const std::string& backend) {
  if (n.op != "matmul" || n.inputs.size() != 2 || n.outputs.size() != 1 || n.inputs[0] < 0 || n.inputs[1] < 0)
    return false;
  if (!n.attrs.value("transpose_b", true)) return false;
  const Tensor& w = weights[size_t(n.inputs[1])];
  return w.data && w.shape.size() == 2 && g.values[size_t(n.outputs[0])].type.dtype == DType::F32 &&
         ops.takes_stored(n.op, backend, n.attrs, 1, w.dtype);
}

// The weights' rows one after another (a row is self-contained in every
// stored layout, quantized ones included).
Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->dim(0);
  Tensor out = Tensor::zeros(parts[0]->dtype, {rows, parts[0]->dim(1)});
  auto* dst = static_cast<uint8_t*>(out.data);
  for (const Tensor* t : parts) {
    std::memcpy(dst, t->data, t->nbytes());
    dst += t->nbytes();
  }
  return out;
}

}  // namespace

Plan plan_graph(const Graph& g, std::vector<Tensor> weights, const OpTable& ops, const std::string& backend) {
  Plan plan;
  weights.resize(g.values.size());
  // Groups of mergeable matmuls by (activation value, weight type, K), in node order.
  std::map<std::tuple<int, DType, int64_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!mergeable(g, n, weights, ops, backend)) continue;
    const Tensor& w = weights[size_t(n.inputs[1])];
    groups[{n.inputs[0], w.dtype, w.dim(1)}].push_back(i);
  }
  std::map<size_t, std::vector<size_t>> first_of;  // first node of a group -> the group
  for (auto& [key, members] : groups)
    if (members.size() > 1) first_of[members.front()] = members;

  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  std::map<size_t, std::pair<int, int64_t>> slice_of;  // member node -> (merged value, column start)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto group = first_of.find(i);
    if (group != first_of.end()) {
      std::vector<const Tensor*> parts;
      std::string names;
      for (size_t m : group->second) {
        parts.push_back(&weights[size_t(g.nodes[m].inputs[1])]);
        names += (names.empty() ? "" : "+") + g.values[size_t(g.nodes[m].outputs[0])].name;
      }
      Tensor merged = concat_rows(parts);
      const Node& first = g.nodes[i];
      Value wv{names + ".weight", {DType::F32, shape_of(merged.shape)}, -1, first.loc};
      int w_id = out->add_value(wv);
      TypedShape y = g.values[size_t(first.outputs[0])].type;
      y.shape.back() = Dim::of(merged.dim(0));
      int y_id = out->add_value(Value{names, y, int(out->nodes.size()), first.loc});
      weights.resize(out->values.size());
      weights[size_t(w_id)] = std::move(merged);
      out->nodes.push_back(Node{"matmul", {first.inputs[0], w_id}, {y_id}, first.attrs, first.loc});
      int64_t start = 0;
      for (size_t m : group->second) {
        slice_of[m] = {y_id, start};
        start += weights[size_t(g.nodes[m].inputs[1])].dim(0);
      }
      ++plan.stats.merged_groups;
      plan.stats.merged_nodes += int(group->second.size());
    }
    auto s = slice_of.find(i);
    if (s == slice_of.end()) {
      out->nodes.push_back(g.nodes[i]);
      continue;
    }
    const Node& member = g.nodes[i];
    const int64_t width = weights[size_t(member.inputs[1])].dim(0);
    Attrs attrs = {{"axis", -1}, {"start", s->second.second}, {"end", s->second.second + width}};
    out->values[size_t(member.outputs[0])].producer = int(out->nodes.size());
    out->nodes.push_back(Node{"slice", {s->second.first}, member.outputs, attrs, member.loc});
  }
  // Producers of values made by nodes that moved.
  for (size_t i = 0; i < out->nodes.size(); ++i)
    for (int o : out->nodes[i].outputs) out->values[size_t(o)].producer = int(i);
  weights.resize(out->values.size());
  plan.graph = std::move(out);
  plan.weights = std::move(weights);
  return plan;
}

}  // namespace arch

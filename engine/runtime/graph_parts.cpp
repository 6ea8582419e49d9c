#include "engine/runtime/graph_parts.h"

#include <set>

namespace arch {

namespace {

// g's nodes [from, to): the weights they read, the outputs they make.
Graph part_of(const Graph& g, size_t from, size_t to) {
  Graph p = g;
  p.nodes.assign(g.nodes.begin() + long(from), g.nodes.begin() + long(to));
  std::set<int> read, made;
  for (const Node& n : p.nodes) {
    for (int v : n.inputs)
      if (v >= 0) read.insert(v);
    for (int v : n.outputs) made.insert(v);
  }
  p.weights.clear();
  for (const auto& w : g.weights)
    if (read.count(w.value)) p.weights.push_back(w), made.insert(w.value);
  for (int v : g.inputs) made.insert(v);
  p.outputs.clear();
  for (const auto& o : g.outputs)
    if (made.count(o.value)) p.outputs.push_back(o);
  for (auto& v : p.values) v.producer = -1;
  for (size_t n = 0; n < p.nodes.size(); ++n)
    for (int v : p.nodes[n].outputs) p.values[size_t(v)].producer = int(n);
  return p;
}

}  // namespace

bool cut_at_wait(const Graph& g, const OpTable& ops, Graph& front, Graph& back) {
  size_t cut = 0;
  while (cut < g.nodes.size()) {
    const OpDef* def = ops.find(g.nodes[cut].op);
    if (def && def->waits) break;
    ++cut;
  }
  if (cut == 0 || cut == g.nodes.size()) return false;
  std::set<int> made_before;
  for (size_t n = 0; n < cut; ++n)
    for (int v : g.nodes[n].outputs) made_before.insert(v);
  for (size_t n = cut; n < g.nodes.size(); ++n) {
    const OpDef* def = ops.find(g.nodes[n].op);
    if (!def || def->stateful) return false;
    for (int v : g.nodes[n].inputs)
      if (made_before.count(v)) return false;
  }
  front = part_of(g, 0, cut);
  back = part_of(g, cut, g.nodes.size());
  return true;
}

}  // namespace arch

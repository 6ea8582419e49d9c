#include "engine/npu2/numerics.h"

#include <map>
#include <set>

namespace arch::npu2 {

Result<Graph> apply_numerics(const Graph& step, const Program& p) {
  // value id -> the type it is stored as.
  std::map<int, std::string> narrow;
  std::set<std::string> narrow_tensors;
  for (const auto& u : p.units) {
    for (const auto& c : u.constants)
      if (c.dtype != "f32")
        for (const auto& v : c.parts) narrow_tensors.insert(v.tensor);  // an offset is added to the rounded weight
    for (size_t i = 0; i < u.writes.size() && i < u.values.size(); ++i) {
      const std::string type = u.writes[i].buffer == "cache" ? (p.caches.empty() ? "f32" : p.caches[0].dtype)
                                                             : (p.buffer(u.writes[i].buffer) ? p.buffer(u.writes[i].buffer)->dtype : "f32");
      if (type == "f32" || type == "i32") continue;
      const int v = step.find_value(u.values[i]);
      if (v < 0) return error("program: unit " + u.kind + " of " + u.block + " computes '" + u.values[i] + "', which the graph has not");
      narrow[v] = type;
    }
  }
  for (const auto& w : step.weights)
    if (narrow_tensors.count(w.tensor)) narrow[w.value] = p.numerics.value("weights", std::string("bf16"));

  Graph g = step;
  g.nodes.clear();
  std::vector<int> renamed(step.values.size());
  for (size_t v = 0; v < renamed.size(); ++v) renamed[v] = int(v);
  auto rounded = [&](int v, const SourceLoc& loc) {
    Value r;
    r.name = step.values[v].name + ".npu2";
    r.type = step.values[v].type;
    r.loc = loc;
    const int id = g.add_value(r);
    Node n;
    n.op = "round";
    n.inputs = {v};
    n.outputs = {id};
    n.attrs = {{"dtype", narrow.at(v)}};
    n.loc = loc;
    g.values[id].producer = int(g.nodes.size());
    g.nodes.push_back(n);
    renamed[v] = id;
  };
  // Weights first (folded once at load, as they read only weights).
  for (const auto& w : step.weights)
    if (narrow.count(w.value)) rounded(w.value, w.loc);
  for (const Node& old : step.nodes) {
    Node n = old;
    for (int& v : n.inputs)
      if (v >= 0) v = renamed[v];
    const int index = int(g.nodes.size());
    for (int v : n.outputs) g.values[v].producer = index;
    g.nodes.push_back(n);
    for (int v : n.outputs)
      if (narrow.count(v)) rounded(v, n.loc);
  }
  for (auto& o : g.outputs) o.value = renamed[o.value];
  return g;
}

}  // namespace arch::npu2

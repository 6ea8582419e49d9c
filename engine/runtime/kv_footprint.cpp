#include "engine/runtime/kv_footprint.h"

namespace arch {

int64_t kv_bytes_per_position(const Program& p) {
  const Graph& g = *p.graph;
  const int64_t element = p.options.kv_f16 ? 2 : 4;
  int64_t per_position = 0;
  for (const Node& node : g.nodes) {
    if (node.op != "kv_cache") continue;
    for (size_t i = 0; i < 2 && i < node.inputs.size(); ++i) {
      if (node.inputs[i] < 0) continue;  // no v: the keys are the values
      const Shape& s = g.values[size_t(node.inputs[i])].type.shape;  // [seq, KH, D]
      if (s.size() == 3 && s[1].concrete() && s[2].concrete()) per_position += s[1].n * s[2].n * element;
    }
  }
  return per_position;
}

int64_t state_bytes_per_sequence(const Program& p) {
  const Graph& g = *p.graph;
  int64_t bytes = 0;
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const OpDef* def = p.steps[n].def;
    if (!def || !def->state_bytes) continue;
    const Node& node = g.nodes[n];
    std::vector<TypedShape> in, out;
    for (int v : node.inputs) in.push_back(v >= 0 ? g.values[size_t(v)].type : TypedShape{});
    for (int v : node.outputs) out.push_back(g.values[size_t(v)].type);
    bytes += def->state_bytes(in, out);
  }
  return bytes;
}

}  // namespace arch

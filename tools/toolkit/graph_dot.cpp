#include "tools/toolkit/graph_dot.h"

#include <map>
#include <sstream>
#include <vector>

namespace arch {

namespace {

std::string dot_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\n') { out += "\\n"; continue; }  // a line break in the label
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// The cluster a value belongs to: its leading "scope.N" (layers.3,
// stages.1), or "" for the graph's top level.
std::string cluster_of(const std::string& name) {
  size_t a = name.find('.');
  if (a == std::string::npos) return "";
  size_t b = name.find('.', a + 1);
  std::string index = name.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return "";
  return name.substr(0, b);
}

}  // namespace

std::string graph_to_dot(const Graph& g) {
  std::ostringstream out;
  out << "digraph " << dot_string(g.family + " " + g.name) << " {\n"
      << "  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  std::map<std::string, std::vector<std::string>> clusters;  // cluster -> node lines
  auto node_id = [](size_t n) { return "n" + std::to_string(n); };
  auto value_id = [](int v) { return "v" + std::to_string(v); };
  for (int v : g.inputs)
    out << "  " << value_id(v) << " [label=" << dot_string(g.values[v].name + "\n" + shape_str(g.values[v].type.shape))
        << ", shape=invhouse];\n";
  for (const auto& w : g.weights)
    out << "  " << value_id(w.value) << " [label=" << dot_string(w.tensor) << ", shape=note, color=gray50, fontcolor=gray30];\n";
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const Value& first = g.values[node.outputs[0]];
    std::string label = first.name + "\n" + node.op + " " + shape_str(first.type.shape);
    clusters[cluster_of(first.name)].push_back(node_id(n) + " [label=" + dot_string(label) + ", shape=box];");
  }
  for (const auto& [cluster, lines] : clusters) {
    std::string indent = "  ";
    if (!cluster.empty()) {
      out << "  subgraph " << dot_string("cluster_" + cluster) << " {\n    label=" << dot_string(cluster)
          << "; style=rounded; color=gray70;\n";
      indent = "    ";
    }
    for (const auto& l : lines) out << indent << l << "\n";
    if (!cluster.empty()) out << "  }\n";
  }
  // Edges: producer node (or input/weight) to consumer node.
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int in : g.nodes[n].inputs) {
      if (in < 0) continue;
      int p = g.values[in].producer;
      out << "  " << (p >= 0 ? node_id(size_t(p)) : value_id(in)) << " -> " << node_id(n) << ";\n";
    }
  for (const auto& o : g.outputs) {
    std::string id = "out_" + std::to_string(&o - g.outputs.data());
    std::string label = o.index >= 0 ? o.name + "[" + std::to_string(o.index) + "]" : o.name;
    out << "  " << id << " [label=" << dot_string(label) << ", shape=house];\n";
    int p = g.values[o.value].producer;
    out << "  " << (p >= 0 ? node_id(size_t(p)) : value_id(o.value)) << " -> " << id << ";\n";
  }
  out << "}\n";
  return out.str();
}

}  // namespace arch

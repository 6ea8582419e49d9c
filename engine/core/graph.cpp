#include "engine/core/graph.h"

#include <sstream>

namespace arch {

const WeightRef* Graph::weight_of(int value) const {
  for (const auto& w : weights)
    if (w.value == value) return &w;
  return nullptr;
}

std::optional<double> Graph::number_of(int value) const {
  if (value < 0 || size_t(value) >= values.size() || values[size_t(value)].producer < 0) return std::nullopt;
  const Node& n = nodes[size_t(values[size_t(value)].producer)];
  if (n.op != "constant" || !values[size_t(value)].type.shape.empty() || !n.attrs.contains("value") ||
      !n.attrs["value"].is_number())
    return std::nullopt;
  return n.attrs["value"].get<double>();
}

std::optional<std::pair<int, double>> Graph::weight_plus_number(int value) const {
  if (value < 0 || size_t(value) >= values.size() || values[size_t(value)].producer < 0) return std::nullopt;
  const Node& n = nodes[size_t(values[size_t(value)].producer)];
  if (n.op != "add" || n.inputs.size() != 2) return std::nullopt;
  for (int side : {0, 1})
    if (weight_of(n.inputs[size_t(side)]))
      if (auto c = number_of(n.inputs[size_t(1 - side)])) return std::pair{n.inputs[size_t(side)], *c};
  return std::nullopt;
}

int Graph::find_value(const std::string& name) const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].name == name) return int(i);
  return -1;
}

int Graph::find_input(const std::string& name) const {
  for (int v : inputs)
    if (values[v].name == name) return v;
  return -1;
}

bool Graph::is_held(int value) const {
  for (int v : held_inputs)
    if (v == value) return true;
  return false;
}

std::string type_str(const TypedShape& t) {
  std::string d(dtype_name(t.dtype));
  for (auto& c : d) c = char(std::tolower(c));
  return d + shape_str(t.shape);
}

const Graph::InputDefault* Graph::default_of(int value) const {
  for (const auto& d : input_defaults)
    if (d.value == value) return &d;
  return nullptr;
}

std::string input_decl(const Graph& g, int value) {
  std::string decl =
      (g.is_held(value) ? "state " : "") + g.values[size_t(value)].name + ": " + type_str(g.values[size_t(value)].type);
  if (const auto* d = g.default_of(value)) {
    std::ostringstream number;
    number << d->number;
    decl += " = " + (d->absent ? std::string("null") : number.str());
  }
  return decl;
}

std::string print_graph(const Graph& g) {
  std::ostringstream out;
  out << "graph " << g.name << "  # family " << g.family << "\n";
  for (int v : g.inputs) out << (g.is_held(v) ? "" : "input ") << input_decl(g, v) << "\n";
  for (const auto& w : g.weights) {
    out << "weight " << g.values[w.value].name << ": " << type_str(g.values[w.value].type);
    if (w.tensor != g.values[w.value].name) out << " = " << w.tensor;
    out << "\n";
  }
  for (const auto& n : g.nodes) {
    for (size_t i = 0; i < n.outputs.size(); ++i)
      out << (i ? ", " : "") << g.values[n.outputs[i]].name;
    out << " = " << n.op << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i)
      out << (i ? ", " : "") << (n.inputs[i] < 0 ? "_" : g.values[n.inputs[i]].name);
    out << ")";
    if (!n.attrs.empty()) out << " " << n.attrs.dump();
    out << " : ";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      out << (i ? ", " : "") << type_str(g.values[n.outputs[i]].type);
    out << "\n";
  }
  for (const auto& o : g.outputs) {
    out << "output " << o.name;
    if (o.index >= 0) out << "[" << o.index << "]";
    out << " = " << g.values[o.value].name << "\n";
  }
  return out.str();
}

}  // namespace arch

#include "engine/runtime/graph_outputs.h"

#include <algorithm>
#include <cstring>

namespace arch {

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> names;
  for (const auto& o : g.outputs)
    if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
  return names;
}

Result<std::vector<int>> output_values(const Graph& g, const std::vector<std::string>& names) {
  std::vector<int> keep;
  for (const auto& name : names) {
    bool found = false;
    for (const auto& o : g.outputs)
      if (o.name == name) {
        keep.push_back(o.value);
        found = true;
      }
    if (!found) {
      std::string have;
      for (const auto& n : output_names(g)) have += (have.empty() ? "" : ", ") + n;
      return error("the graph has no output '" + name + "' (it has: " + have + ")");
    }
  }
  return keep;
}

Result<std::map<std::string, Tensor>> collect_outputs(const Graph& g, const std::map<int, Tensor>& vals,
                                                      const std::vector<std::string>& names) {
  std::map<std::string, Tensor> out;
  for (const auto& name : names) {
    std::vector<const GraphOutput*> parts;
    for (const auto& o : g.outputs)
      if (o.name == name) parts.push_back(&o);
    if (parts.size() == 1 && parts[0]->index < 0) {
      out[name] = vals.at(parts[0]->value);
      continue;
    }
    std::sort(parts.begin(), parts.end(), [](auto* a, auto* b) { return a->index < b->index; });
    const Tensor& first = vals.at(parts[0]->value);
    Dims shape = first.shape;
    shape.insert(shape.begin(), int64_t(parts.size()));
    Tensor stacked = Tensor::zeros(first.dtype, shape);
    size_t bytes = first.nbytes();
    for (size_t k = 0; k < parts.size(); ++k) {
      const Tensor& part = vals.at(parts[k]->value);
      if (part.shape != first.shape)
        return error("output " + name + "[" + std::to_string(parts[k]->index) + "] is " + dims_str(part.shape) +
                     ", unlike " + name + "[" + std::to_string(parts[0]->index) + "] " + dims_str(first.shape));
      std::memcpy(static_cast<char*>(stacked.data) + k * bytes, part.data, bytes);
    }
    out[name] = stacked;
  }
  return out;
}

}  // namespace arch

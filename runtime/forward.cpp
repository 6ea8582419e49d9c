#include "runtime/forward.h"

#include "kernels/kernels.h"

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

namespace {

// As the graph takes it: batch dim of 1 dropped, I64 ids narrowed.
Result<Tensor> conform(const std::string& name, Tensor t, const Value& want) {
  if (t.shape.size() == want.type.shape.size() + 1 && !t.shape.empty() && t.shape[0] == 1)
    t = t.reshaped(Dims(t.shape.begin() + 1, t.shape.end()));
  if (t.dtype == DType::I64 && want.type.dtype == DType::I32) {
    Tensor n = Tensor::zeros(DType::I32, t.shape);
    const auto* src = static_cast<const int64_t*>(t.data);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (src[i] < INT32_MIN || src[i] > INT32_MAX) return error(name + " holds " + std::to_string(src[i]));
      n.i32()[i] = int32_t(src[i]);
    }
    t = n;
  }
  if (t.dtype != want.type.dtype || t.shape.size() != want.type.shape.size())
    return error("input '" + name + "' is " + std::string(dtype_name(t.dtype)) + dims_str(t.shape) +
                 ", the model takes " + std::string(dtype_name(want.type.dtype)) + shape_str(want.type.shape));
  return t;
}

}  // namespace

Result<std::map<int, Tensor>> run_with_inputs(const Model& m, std::map<std::string, Tensor> inputs,
                                              const std::vector<int>& keep, CheckStats* check) {
  const Graph& g = m.graph();
  if (inputs.count("input_ids") && g.find_input("input_ids") < 0 && g.find_input("tokens") >= 0) {
    inputs["tokens"] = inputs["input_ids"];
    inputs.erase("input_ids");
  }
  // Batch 1 without padding: an all-ones attention mask is the same as none;
  // anything else would be silently wrong, so it is refused.
  if (auto mask = inputs.find("attention_mask"); mask != inputs.end() && g.find_input("attention_mask") < 0) {
    const Tensor& m = mask->second;
    for (int64_t k = 0; k < m.numel(); ++k) {
      int64_t v = m.dtype == DType::I64 ? static_cast<const int64_t*>(m.data)[k]
                  : m.dtype == DType::I32 ? static_cast<const int32_t*>(m.data)[k]
                  : m.dtype == DType::F32 ? int64_t(m.f32()[k]) : 0;
      if (v != 1) return error("attention_mask with padding is not supported (batch 1, all ones)");
    }
    inputs.erase(mask);
  }
  for (const auto& [name, t] : inputs)
    if (g.find_input(name) < 0) {
      std::string takes;
      for (int v : g.inputs) takes += (takes.empty() ? "" : ", ") + g.values[v].name;
      return error("the model takes no input '" + name + "' (it takes: " + takes + ")");
    }
  // The run-time seq: from the given inputs that have it.
  std::map<int, Tensor> feed;
  int64_t seq = -1;
  for (int v : g.inputs) {
    auto it = inputs.find(g.values[v].name);
    if (it == inputs.end()) continue;
    ARCH_TRY(Tensor t, conform(it->first, it->second, g.values[v]));
    const Shape& want = g.values[v].type.shape;
    for (size_t d = 0; d < want.size(); ++d) {
      if (want[d].concrete() && t.shape[d] != want[d].n)
        return error("input '" + it->first + "' is " + dims_str(t.shape) + ", the model takes " + shape_str(want));
      if (want[d].sym == 1) {  // seq; a `_` dim (an image's H, W) takes any size
        if (seq >= 0 && seq != t.shape[d])
          return error("input '" + it->first + "' has " + std::to_string(t.shape[d]) + " positions, another input " +
                       std::to_string(seq));
        seq = t.shape[d];
      }
    }
    feed[v] = t;
  }
  if (seq == 0) return error("the inputs are empty (no positions)");
  for (int v : g.inputs) {
    if (feed.count(v)) continue;
    const Value& val = g.values[v];
    bool per_position = val.type.shape.size() == 1 && !val.type.shape[0].concrete();
    if (val.type.dtype != DType::I32 || !per_position || seq < 0)
      return error("input '" + val.name + "' is missing");
    Tensor t = Tensor::zeros(DType::I32, {seq});
    if (val.name == "positions")
      for (int64_t i = 0; i < seq; ++i) t.i32()[i] = int32_t(i);
    feed[v] = t;
  }
  RunState state;
  state.max_context = std::max<int64_t>(seq, 1);
  state.check = check;
  state.ops = &op_table();
  return run_program(m.program, state, feed, std::max<int64_t>(seq, 0), std::max<int64_t>(seq, 0), keep);
}

Result<std::map<std::string, Tensor>> forward(const Model& m, std::map<std::string, Tensor> inputs,
                                              const std::vector<std::string>& outputs, CheckStats* check) {
  ARCH_TRY(std::vector<int> keep, output_values(m.graph(), outputs));
  ARCH_TRY(auto vals, run_with_inputs(m, std::move(inputs), keep, check));
  return collect_outputs(m.graph(), vals, outputs);
}

}  // namespace arch

#include "engine/session.h"

#include <algorithm>
#include <cstring>

namespace arch {

Session::Session(const Model& m, int64_t max_context) : m_(m) { state_.max_context = max_context; }

void Session::reset() {
  state_.states.clear();
  position_ = 0;
}

std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> names;
  for (const auto& o : g.outputs)
    if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
  return names;
}

Result<std::map<std::string, Tensor>> Session::step(std::span<const int32_t> ids,
                                                    const std::vector<std::string>& outputs) {
  const Graph& g = m_.graph();
  int64_t n = int64_t(ids.size());
  if (n == 0) return error("a step needs at least one token");
  if (position_ + n > state_.max_context)
    return error("the context is full: " + std::to_string(position_) + " + " + std::to_string(n) +
                 " tokens exceed the " + std::to_string(state_.max_context) + " positions it was sized for");
  int tokens_id = g.find_input("tokens"), positions_id = g.find_input("positions");
  if (tokens_id < 0) return error("graph " + g.name + " has no 'tokens' input");
  std::map<int, Tensor> inputs;
  Tensor tok = Tensor::zeros(DType::I32, {n});
  std::memcpy(tok.data, ids.data(), size_t(n) * 4);
  inputs[tokens_id] = tok;
  if (positions_id >= 0) {
    Tensor pos = Tensor::zeros(DType::I32, {n});
    for (int64_t k = 0; k < n; ++k) pos.i32()[k] = int32_t(position_ + k);
    inputs[positions_id] = pos;
  }
  std::vector<int> keep;
  for (const auto& name : outputs) {
    bool found = false;
    for (const auto& o : g.outputs)
      if (o.name == name) {
        keep.push_back(o.value);
        found = true;
      }
    if (!found) return error("the graph has no output '" + name + "'");
  }
  ARCH_TRY(auto vals, run_program(m_.program, state_, inputs, n, position_ + n, keep));
  position_ += n;
  std::map<std::string, Tensor> out;
  for (const auto& name : outputs) {
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
    for (size_t k = 0; k < parts.size(); ++k)
      std::memcpy(static_cast<char*>(stacked.data) + k * bytes, vals.at(parts[k]->value).data, bytes);
    out[name] = stacked;
  }
  return out;
}

}  // namespace arch

#include "engine/core/op.h"

#include <stdexcept>

namespace arch {

void OpTable::define(OpDef def, Kernel reference) {
  std::string name = def.name;
  if (defs_.count(name)) throw std::logic_error("op defined twice: " + name);
  defs_.emplace(name, std::move(def));
  kernels_[name]["reference"] = std::move(reference);
}

void OpTable::add_kernel(const std::string& op, const std::string& backend, Kernel k, TakesStored takes,
                         CheckTolerance check, bool fills) {
  if (!defs_.count(op)) throw std::logic_error("kernel for an undefined op: " + op);
  kernels_[op][backend] = std::move(k);
  if (takes) takes_[op][backend] = std::move(takes);
  if (check) check_[op][backend] = std::move(check);
  fills_[op][backend] = fills;
}

void OpTable::add_weight_layout(const std::string& op, const std::string& backend, PrepareWeight prepare) {
  if (!defs_.count(op)) throw std::logic_error("a weight layout for an undefined op: " + op);
  prepare_[op][backend] = std::move(prepare);
}

uint8_t OpTable::weight_layout_for(const std::string& op, const std::string& backend, const Attrs& attrs,
                                   size_t input, const Tensor& stored) const {
  auto it = prepare_.find(op);
  if (it == prepare_.end()) return 0;
  auto p = it->second.find(backend);
  return p == it->second.end() ? 0 : p->second(attrs, input, stored);
}

bool OpTable::fills_outputs(const std::string& op, const std::string& backend) const {
  if (auto it = fills_.find(op); it != fills_.end())
    if (auto b = it->second.find(backend); b != it->second.end()) return b->second;
  // A backend without its own kernel runs the reference.
  auto def = defs_.find(op);
  return def != defs_.end() && def->second.fills;
}

Tolerance OpTable::check_tolerance(const std::string& op, const std::string& backend,
                                   std::span<const Tensor> inputs) const {
  const Tolerance own = defs_.at(op).tolerance;
  auto it = check_.find(op);
  if (it == check_.end()) return own;
  auto c = it->second.find(backend);
  return c == it->second.end() ? own : c->second(own, inputs);
}

bool OpTable::takes_stored(const std::string& op, const std::string& backend, const Attrs& attrs, size_t input,
                           DType stored) const {
  if (stored == DType::F32) return true;
  auto it = takes_.find(op);
  if (it == takes_.end()) return false;
  auto t = it->second.find(backend);
  return t != it->second.end() && t->second(attrs, input, stored);
}

const OpDef* OpTable::find(const std::string& name) const {
  auto it = defs_.find(name);
  return it == defs_.end() ? nullptr : &it->second;
}

const Kernel* OpTable::kernel(const std::string& op, const std::string& backend) const {
  auto it = kernels_.find(op);
  if (it == kernels_.end()) return nullptr;
  auto k = it->second.find(backend);
  if (k == it->second.end()) k = it->second.find("reference");
  return k == it->second.end() ? nullptr : &k->second;
}

std::vector<std::string> OpTable::names() const {
  std::vector<std::string> out;
  for (auto& [n, d] : defs_) out.push_back(n);
  return out;
}

}  // namespace arch

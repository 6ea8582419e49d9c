// The global names a chat template can call, as transformers' jinja2
// environment defines them: range, dict, namespace, joiner (jinja2's), and
// raise_exception, strftime_now (transformers').
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "importer/text/chat_template/value.h"

namespace arch::jinja {

class Namespace;

// `now` fixes what strftime_now sees (local time); unset: the clock. Each
// namespace() made is also added to `made` when given (a render unlinks
// them when it ends: see Namespace::clear).
std::vector<std::pair<std::string, Value>> global_names(
    std::optional<std::chrono::system_clock::time_point> now,
    std::vector<std::weak_ptr<Namespace>>* made = nullptr);

// namespace(...): the one mutable value, assigned with {% set ns.x = ... %}.
class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::optional<Value> get_attr(const std::string& name) const override;
  bool set_attr(const std::string& name, Value value) override;
  bool append_repr(std::string& out, int level, size_t cap) const override;
  int depth() const override { return depth_; }
  // Drops the attributes: a namespace can hold itself (ns.me = ns), and such
  // a cycle is never freed unless it is broken when the render ends.
  void clear() { attrs_.clear(); }

 private:
  std::vector<std::pair<std::string, Value>> attrs_;
  int depth_ = 1;  // an upper bound: it only grows
};

}  // namespace arch::jinja

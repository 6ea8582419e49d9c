// Instantiating a template: the config fills in its fields, flags are read
// from the config or detected from tensor presence, and the graph body is
// unrolled (loops over layers, conditionals on flags) into IR.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dsl/ast.h"
#include "dsl/value.h"
#include "engine/core/graph.h"
#include "engine/core/op.h"

namespace arch::dsl {

struct InstantiateOptions {
  nlohmann::json config = nlohmann::json::object();  // normalised config.json
  // Answers exists(name) in flags and bodies; unset: nothing exists.
  std::function<bool(const std::string&)> tensor_exists;
  // The shape of a checkpoint tensor (nullopt: none such), for weights
  // declared `[*]`; unset: none has one.
  std::function<std::optional<std::vector<int64_t>>(const std::string&)> tensor_shape;
  std::map<std::string, bool> flag_overrides;        // --flag name=true
  std::string graph;                                  // empty: the template's first graph
};

// Flag overrides as the tools take them: "NAME=true", "NAME=false", or
// "NAME" alone (true).
Result<std::map<std::string, bool>> parse_flag_overrides(const std::vector<std::string>& given);

struct Instance {
  std::vector<std::pair<std::string, Val>> config;  // every field, resolved, in order
  std::vector<std::pair<std::string, bool>> flags;
  Graph graph;
};

Result<Instance> instantiate(const Template& t, const InstantiateOptions& opt, const OpTable& ops);

}  // namespace arch::dsl

// A graph's outputs by the names the template gives them (transformers'
// names: logits, last_hidden_state, layer_outputs[i], ...).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/core/graph.h"

namespace arch {

// Every output name the graph declares (stacked ones once).
std::vector<std::string> output_names(const Graph& g);

// The value ids `names` need kept.
Result<std::vector<int>> output_values(const Graph& g, const std::vector<std::string>& names);

// The outputs named, from a run's values (stacked ones, such as
// layer_outputs[i], assembled along a new first axis).
Result<std::map<std::string, Tensor>> collect_outputs(const Graph& g, const std::map<int, Tensor>& vals,
                                                      const std::vector<std::string>& names);

}  // namespace arch

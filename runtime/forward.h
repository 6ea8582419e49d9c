// One pass of a model's graph over named inputs, the way `archrun forward`
// runs any family: decoders (tokens), encoders (input_ids, token_type_ids)
// and vision models (pixel_values) alike.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/interpreter.h"
#include "runtime/model.h"

namespace arch {

// `inputs` by the graph's input names; "input_ids" also answers a graph
// input named "tokens". A leading batch dim of 1 is dropped; I64 ids are
// narrowed to I32; an all-ones attention_mask is accepted (anything else is
// refused: no padding yet). Absent inputs: `positions` is 0..seq-1, other integer
// inputs of shape [seq] are zeros (token_type_ids); anything else is an error.
Result<std::map<std::string, Tensor>> forward(const Model& m, std::map<std::string, Tensor> inputs,
                                              const std::vector<std::string>& outputs, CheckStats* check = nullptr);

// The same pass, returning the values `keep` names by id (every value, for
// archc diff), inputs filled as forward() fills them.
Result<std::map<int, Tensor>> run_with_inputs(const Model& m, std::map<std::string, Tensor> inputs,
                                              const std::vector<int>& keep, CheckStats* check = nullptr);

// Every output name the graph declares (stacked ones once).
std::vector<std::string> output_names(const Graph& g);

// The outputs named, from a run's values (stacked ones, such as
// layer_outputs[i], assembled along a new first axis).
Result<std::map<std::string, Tensor>> collect_outputs(const Graph& g, const std::map<int, Tensor>& vals,
                                                      const std::vector<std::string>& names);
// The value ids `names` need kept.
Result<std::vector<int>> output_values(const Graph& g, const std::vector<std::string>& names);

}  // namespace arch

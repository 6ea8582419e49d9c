// One pass of a model's graph over named inputs, the way `archrun forward`
// runs any family: decoders (tokens), encoders (input_ids, token_type_ids)
// and vision models (pixel_values) alike. A fresh session each call.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/runtime/graph_outputs.h"
#include "engine/runtime/session.h"

namespace arch {

// `inputs` by the graph's input names, as transformers names them:
// "input_ids" also answers a graph input named "tokens"; an all-ones
// attention_mask is accepted (anything else is refused: no padding yet);
// absent integer inputs of shape [seq] are zeros (token_type_ids), absent
// `positions` 0..seq-1. The rest is Session::run's (batch dim of 1 dropped,
// I64 ids narrowed). `graph`: which of the template's graphs (empty: the
// first; for an encoder-decoder, both: the encoder on the inputs, then the
// decoder on `decoder_input_ids` with what the encoder made, outputs from
// either).
Result<NamedTensors> forward(const Model& m, NamedTensors inputs, const std::vector<std::string>& outputs,
                             CheckStats* check = nullptr, const std::string& graph = "");

// The same pass, returning the values `keep` names by id (every value, for
// archc diff), inputs filled as forward() fills them.
Result<std::map<int, Tensor>> run_with_inputs(const Model& m, NamedTensors inputs, const std::vector<int>& keep,
                                              CheckStats* check = nullptr);

}  // namespace arch

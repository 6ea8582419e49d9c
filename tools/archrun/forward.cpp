// archrun forward: one pass over named inputs; named outputs written to safetensors.
#include <algorithm>

#include "engine/core/finite.h"
#include "engine/runtime/forward.h"
#include "importer/checkpoint/safetensors.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_forward(const ForwardArgs& a) {
  auto in = read_safetensors(a.inputs);
  if (!in.ok()) return fail(in.error());
  // One pass where the inputs enter: a NaN in pixel_values would come out
  // as NaN logits, said nowhere.
  for (const auto& [name, t] : in->tensors)
    if (Status st = check_finite(t, a.inputs + ": tensor '" + name + "'"); !st.ok()) return fail(st.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  auto graph = (*m)->find_graph(a.graph);
  if (!graph.ok()) return fail(graph.error());
  // The graph asked for; with none, an encoder-decoder runs both of its
  // stages (forward() chains them) and answers for either's outputs.
  std::vector<std::string> all = output_names((*graph)->graph);
  if (a.graph.empty() && (*m)->is_encoder_decoder()) {
    all.clear();
    for (const auto& g : (*m)->graphs)
      for (auto& n : output_names(g->graph)) all.push_back(n);
  }
  std::vector<std::string> names = a.outputs;
  if (a.all_outputs) names = all;
  if (names.empty()) {
    // logits where the model has them, else last_hidden_state, else its last output
    for (const char* pref : {"logits", "last_hidden_state"})
      if (names.empty() && std::find(all.begin(), all.end(), pref) != all.end()) names = {pref};
    if (names.empty()) names = {all.back()};
  }
  CheckStats check;
  auto outs = forward(**m, in->tensors, names, a.common.check ? &check : nullptr, a.graph);
  if (a.common.check) report_check(check, !outs.ok());
  if (!outs.ok()) return fail(error(a.inputs + ": " + outs.error().message));
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& n : names) {
    Tensor v = outs->at(n);
    Dims shape = v.shape;
    shape.insert(shape.begin(), 1);  // batch 1, as transformers returns it
    tensors.emplace_back(n, v.reshaped(shape));
  }
  Status st = write_safetensors(a.out, tensors);
  if (!st.ok()) return fail(st.error());
  return 0;
}

}  // namespace arch::cli

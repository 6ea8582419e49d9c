// archrun forward: one pass over named inputs; named outputs written to safetensors.
#include <algorithm>

#include "runtime/forward.h"
#include "importer/safetensors.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_forward(const ForwardArgs& a) {
  auto in = read_safetensors(a.inputs);
  if (!in.ok()) return fail(in.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  auto graph = (*m)->find_graph(a.graph);
  if (!graph.ok()) return fail(graph.error());
  const Graph& g = (*graph)->graph;
  std::vector<std::string> names = a.outputs;
  if (a.all_outputs) names = output_names(g);
  if (names.empty()) {
    // logits where the model has them, else last_hidden_state, else its last output
    auto all = output_names(g);
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

// archrun forward: one pass over named inputs; named outputs written to safetensors.
#include <algorithm>

#include "engine/forward.h"
#include "importer/safetensors.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_forward(const ForwardArgs& a) {
  auto in = read_safetensors(a.inputs);
  if (!in.ok()) return fail(in.error());
  // Batch 1 without padding: a mask of all ones is the same as none.
  if (auto mask = in->tensors.find("attention_mask"); mask != in->tensors.end()) {
    const Tensor& m = mask->second;
    for (int64_t k = 0; k < m.numel(); ++k) {
      int64_t v = m.dtype == DType::I64 ? static_cast<const int64_t*>(m.data)[k]
                  : m.dtype == DType::I32 ? static_cast<const int32_t*>(m.data)[k] : 1;
      if (v != 1) return fail(error(a.inputs + ": attention_mask with padding is not supported (batch 1, all ones)"));
    }
    in->tensors.erase(mask);
  }
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  std::vector<std::string> names = a.outputs;
  if (a.all_outputs) names = output_names((*m)->graph());
  if (names.empty()) {
    // logits where the model has them, else last_hidden_state, else its last output
    auto all = output_names((*m)->graph());
    for (const char* pref : {"logits", "last_hidden_state"})
      if (names.empty() && std::find(all.begin(), all.end(), pref) != all.end()) names = {pref};
    if (names.empty()) names = {all.back()};
  }
  CheckStats check;
  auto outs = forward(**m, in->tensors, names, a.common.check ? &check : nullptr);
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

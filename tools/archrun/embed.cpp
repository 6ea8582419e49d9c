// archrun embed: a sentence embedding (the mean of the last hidden states).
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/runtime/forward.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_embed(const EmbedArgs& a) {
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the text as -p TEXT or as --ids 101,2023,102 (one of them)"));
  Result<std::vector<int32_t>> ids = std::vector<int32_t>{};
  if (!a.prompt.empty()) {
    auto tok = open_tokenizer(a.common.model);
    if (!tok.ok()) return fail(tok.error());
    ids = (*tok)->encode(a.prompt, true);  // [CLS] ... [SEP], as the encoder was trained
  } else {
    ids = parse_ids(a.ids);
  }
  if (!ids.ok()) return fail(ids.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids->size())});
  std::copy(ids->begin(), ids->end(), t.i32());
  auto outs = forward(**m, {{"input_ids", t}}, {"mean_pooled"});
  if (!outs.ok()) return fail(outs.error());
  const Tensor& v = outs->at("mean_pooled");
  std::vector<float> vec(v.f32(), v.f32() + v.numel());
  if (a.normalize) {
    double norm = 0;
    for (float x : vec) norm += double(x) * x;
    norm = std::max(std::sqrt(norm), 1e-12);  // as torch.nn.functional.normalize
    for (float& x : vec) x = float(x / norm);
  }
  if (a.json) {
    nlohmann::json j;
    j["embedding"] = vec;
    j["dim"] = vec.size();
    std::printf("%s\n", j.dump().c_str());
  } else {
    for (size_t i = 0; i < vec.size(); ++i) std::printf("%s%.7g", i ? " " : "", vec[i]);
    std::printf("\n");
  }
  return 0;
}

}  // namespace arch::cli

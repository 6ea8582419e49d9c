#include "tools/toolkit/compare.h"

#include <cmath>
#include <filesystem>

#include "engine/runtime/forward.h"
#include "engine/runtime/generate.h"
#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/checkpoint/safetensors.h"

namespace arch {

const TensorDiff* CompareReport::first_failure() const {
  for (const auto& t : tensors)
    if (!t.ok()) return &t;
  return nullptr;
}

bool CompareReport::ok() const {
  return !first_failure() && missing.empty() && want_tokens == got_tokens;
}

namespace {

Result<nlohmann::json> read_json_file(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  return parse_json(file->text(), path);
}

TensorDiff diff(const std::string& name, const float* out, const float* ref, int64_t n, const CompareTolerance& tol) {
  TensorDiff d;
  d.name = name;
  for (int64_t i = 0; i < n; ++i) d.ref_max = std::max(d.ref_max, double(std::abs(ref[i])));
  for (int64_t i = 0; i < n; ++i) {
    double e = std::abs(double(out[i]) - double(ref[i]));
    if (!(e <= d.max_abs)) d.max_abs = std::isnan(e) ? INFINITY : e;  // NaN counts as a miss
  }
  d.bound = tol.rel * d.ref_max + tol.abs;
  return d;
}

}  // namespace

Result<std::map<std::string, Tensor>> golden_inputs(const std::string& dir) {
  std::map<std::string, Tensor> in;
  ARCH_TRY(nlohmann::json j, read_json_file(dir + "/inputs.json"));
  for (const char* key : {"input_ids", "token_type_ids", "decoder_input_ids"}) {
    if (!j.contains(key) || !j[key].is_array()) continue;
    auto ids = j[key].get<std::vector<int32_t>>();
    Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
    std::copy(ids.begin(), ids.end(), t.i32());
    in[key] = t;
  }
  if (std::filesystem::exists(dir + "/inputs.safetensors")) {
    ARCH_TRY(auto f, read_safetensors(dir + "/inputs.safetensors"));
    for (auto& [name, t] : f.tensors) in[name] = t;
  }
  return in;
}

Result<CompareReport> compare_with_golden(const Model& m, const std::string& dir, const CompareTolerance& tol) {
  CompareReport r;
  ARCH_TRY(auto expected, read_safetensors(dir + "/expected.safetensors"));
  ARCH_TRY(auto inputs, golden_inputs(dir));
  std::vector<std::string> have;  // every graph's: an encoder-decoder's come from two
  for (const auto& g : m.graphs)
    for (auto& n : output_names(g->graph)) have.push_back(n);
  std::vector<std::string> names;
  // A tower run only as far as the model reads it makes no last hidden
  // state of its own (the golden's is past the layers it reads).
  bool partial_tower = false;
  for (const auto& g : m.graphs)
    for (const auto& o : g->graph.outputs)
      if (o.name == "vision_layer_outputs" && expected.tensors.count(o.name) &&
          expected.tensors.at(o.name).numel() > 0) partial_tower = true;
  for (const auto& [name, t] : expected.tensors) {
    if (partial_tower && name == "vision_last_hidden_state" &&
        std::find(have.begin(), have.end(), name) == have.end()) {
      r.not_computed.push_back(name);
      continue;
    }
    if (std::find(have.begin(), have.end(), name) != have.end()) names.push_back(name);
    // Not outputs of a model: the golden's record of its step logits, a
    // bf16 rerun, and the attention masks transformers built.
    else if (name != "greedy_step_logits" && name != "logits_bf16_compute" && name.rfind("attention_mask_", 0) != 0)
      r.missing.push_back(name);
  }
  ARCH_TRY(auto outs, forward(m, inputs, names));
  // Stacked per-layer tensors first, in layer order, so the first failure
  // is the earliest layer that diverges; then the rest by name.
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& name : names) {
      const Tensor& ref = expected.tensors.at(name);
      const Tensor& out = outs.at(name);
      bool stacked = name.find("layer_outputs") != std::string::npos || name == "router_logits";
      if (stacked != (pass == 0)) continue;
      // A golden's leading batch of 1 (an image tower's [1, tokens, width]).
      Tensor ref_view = ref;
      if (ref.shape.size() == out.shape.size() + 1 && ref.shape[0] == 1)
        ref_view.shape = Dims(ref.shape.begin() + 1, ref.shape.end());
      // A tower run only as far as the model reads it (LLaVA's
      // vision_feature_layer): its layers compared, the rest missing.
      if (stacked && out.shape.size() == ref_view.shape.size() && out.shape[0] < ref_view.shape[0] &&
          Dims(out.shape.begin() + 1, out.shape.end()) == Dims(ref_view.shape.begin() + 1, ref_view.shape.end())) {
        for (int64_t p = out.shape[0]; p < ref_view.shape[0]; ++p) r.not_computed.push_back(name + "[" + std::to_string(p) + "]");
        ref_view.shape[0] = out.shape[0];
      }
      if (out.shape != ref_view.shape) {
        TensorDiff d;
        d.name = name + " (shape " + dims_str(out.shape) + ", expected " + dims_str(ref.shape) + ")";
        d.max_abs = INFINITY;
        r.tensors.push_back(d);
        continue;
      }
      int64_t parts = stacked ? ref_view.shape[0] : 1, n = ref_view.numel() / parts;
      for (int64_t p = 0; p < parts; ++p)
        r.tensors.push_back(diff(stacked ? name + "[" + std::to_string(p) + "]" : name, out.f32() + p * n,
                                 ref.f32() + p * n, n, tol));
    }
  // Greedy tokens, for causal LMs.
  ARCH_TRY(nlohmann::json ej, read_json_file(dir + "/expected.json"));
  // Greedy tokens, for causal LMs and encoder-decoders (from the encoder's
  // inputs and the decoder's start token, as transformers' generate).
  if (ej.contains("greedy") && ej["greedy"].contains("new_token_ids") && m.token_graph()) {
    r.want_tokens = ej["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
    GenerateOptions opt;
    opt.max_new_tokens = int(r.want_tokens.size());
    if (m.is_encoder_decoder()) {
      ARCH_TRY(int32_t start, decoder_start_token(m));
      inputs.erase("decoder_input_ids");
      Session s(m, 1 + opt.max_new_tokens);
      ARCH_TRY(auto g, generate_encoded(s, inputs, {start}, opt));
      r.got_tokens = g.tokens;
    } else if (!m.optional_state().empty() && inputs.size() > 1) {
      // A vision-language model: the image's features made first.
      const Tensor ids = inputs.at("input_ids");
      inputs.erase("input_ids");
      const std::vector<int32_t> prompt(ids.i32(), ids.i32() + ids.numel());
      Session s(m, int64_t(prompt.size()) + opt.max_new_tokens);
      ARCH_TRY(auto g, generate_encoded(s, inputs, prompt, opt));
      r.got_tokens = g.tokens;
    } else {
      const Tensor& ids = inputs.at("input_ids");
      ARCH_TRY(auto g, generate(m, std::vector<int32_t>(ids.i32(), ids.i32() + ids.numel()), opt));
      r.got_tokens = g.tokens;
    }
  }
  return r;
}

}  // namespace arch

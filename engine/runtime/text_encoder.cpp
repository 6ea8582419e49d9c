#include "engine/runtime/text_encoder.h"

#include <algorithm>
#include <cmath>

#include "engine/core/finite.h"
#include "engine/runtime/forward.h"

namespace arch {

int64_t text_positions(const Model& m) { return std::max<int64_t>(m.config_int("input_positions", 0), 0); }

bool has_output(const Model& m, const std::string& name) { return m.producer_of(name) != nullptr; }

bool has_classifier(const Model& m) {
  if (m.token_graph()) return false;
  for (const auto& g : m.graphs)
    for (const GraphOutput& o : g->graph.outputs)
      if (o.name == "logits" && o.index < 0 && g->graph.values[size_t(o.value)].type.shape.size() == 1) return true;
  return false;
}

namespace {

Tensor ids_tensor(std::span<const int32_t> ids) {
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.i32());
  return t;
}

Status check_length(const Model& m, size_t n) {
  if (n == 0) return error("the input holds no tokens");
  const int64_t limit = text_positions(m);
  if (limit > 0 && int64_t(n) > limit)
    return error("an input of " + std::to_string(n) + " tokens exceeds the model's " + std::to_string(limit) + " positions");
  return {};
}

}  // namespace

Result<std::vector<float>> embed_ids(const Model& m, std::span<const int32_t> ids, Pooling pooling, bool normalize) {
  ARCH_TRY_STATUS(check_length(m, ids.size()));
  const std::string wanted = pooling == Pooling::Pooler ? "pooler_output" : "last_hidden_state";
  if (!has_output(m, wanted))
    return error(std::string("pooling '") + pooling_name(pooling) + "' needs the model's " + wanted + ", which it does not make");
  ARCH_TRY(NamedTensors outs, forward(m, {{"input_ids", ids_tensor(ids)}}, {wanted}));
  const Tensor& h = outs.at(wanted);
  std::vector<float> v;
  if (pooling == Pooling::Pooler) {
    v.assign(h.f32(), h.f32() + h.numel());
  } else {
    if (h.shape.size() != 2) return error(wanted + " is " + dims_str(h.shape) + ", not [tokens, hidden]");
    const int64_t n = h.shape[0], d = h.shape[1];
    const float* x = h.f32();
    v.assign(size_t(d), 0.0f);
    for (int64_t j = 0; j < d; ++j) {
      double acc = pooling == Pooling::Max ? -INFINITY : 0.0;
      if (pooling == Pooling::Cls) acc = x[j];
      else if (pooling == Pooling::LastToken) acc = x[(n - 1) * d + j];
      else
        for (int64_t i = 0; i < n; ++i) acc = pooling == Pooling::Max ? std::max(acc, double(x[i * d + j])) : acc + x[i * d + j];
      v[size_t(j)] = float(pooling == Pooling::Mean ? acc / double(n) : acc);
    }
  }
  if (normalize) {
    double norm = 0;
    for (float x : v) norm += double(x) * x;
    norm = std::max(std::sqrt(norm), 1e-12);  // as torch.nn.functional.normalize
    for (float& x : v) x = float(x / norm);
  }
  return v;
}

float relevance(std::span<const float> logits) {
  if (logits.empty()) return 0.0f;
  if (logits.size() == 1) return float(1.0 / (1.0 + std::exp(-double(logits[0]))));
  double most = logits[0], sum = 0;
  for (float x : logits) most = std::max(most, double(x));
  for (float x : logits) sum += std::exp(double(x) - most);
  return float(std::exp(double(logits.back()) - most) / sum);
}

Result<std::vector<RankedPassage>> rerank(const Model& m, const Tokenizer& tok, const std::string& query,
                                          const std::vector<std::string>& passages) {
  if (!has_classifier(m))
    return error("the model has no sequence-classification head (an encoder's logits, one per label): it cannot score passages");
  const int64_t limit = text_positions(m);
  std::vector<RankedPassage> ranked;
  for (size_t i = 0; i < passages.size(); ++i) {
    ARCH_TRY(PairEncoding pair, tok.encode_pair(query, passages[i], limit > 0 ? size_t(limit) : size_t(1) << 20));
    ARCH_TRY_STATUS(check_length(m, pair.ids.size()));
    NamedTensors in = {{"input_ids", ids_tensor(pair.ids)}};
    // Segments where the encoder reads them (BERT); RoBERTa's, ModernBERT's are all one.
    if (m.graph().find_input("token_type_ids") >= 0) in["token_type_ids"] = ids_tensor(pair.type_ids);
    auto outs = forward(m, std::move(in), {"logits"});
    if (!outs.ok()) return error("passage " + std::to_string(i) + ": " + outs.error().message);
    const Tensor& l = outs->at("logits");
    if (l.shape.size() != 1) return error("the model's logits are " + dims_str(l.shape) + ", not one score per label");
    RankedPassage r;
    r.index = i;
    r.tokens = pair.ids.size();
    r.logits.assign(l.f32(), l.f32() + l.numel());
    if (!all_finite(std::span<const float>(r.logits)))  // a NaN would leave the passages no order
      return error("passage " + std::to_string(i) + ": the head's logits are not all numbers (NaN or Inf): its weights may hold NaN or Inf");
    r.relevance_score = relevance(r.logits);
    ranked.push_back(std::move(r));
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedPassage& a, const RankedPassage& b) { return a.relevance_score > b.relevance_score; });
  return ranked;
}

}  // namespace arch

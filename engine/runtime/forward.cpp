#include "engine/runtime/forward.h"

#include <algorithm>

namespace arch {

namespace {

// transformers' input names and defaults onto the graph's inputs.
Result<NamedTensors> as_graph_inputs(const Graph& g, NamedTensors inputs) {
  if (inputs.count("input_ids") && g.find_input("input_ids") < 0 && g.find_input("tokens") >= 0) {
    inputs["tokens"] = inputs["input_ids"];
    inputs.erase("input_ids");
  }
  // Batch 1 without padding: an all-ones attention mask is the same as none;
  // anything else would be silently wrong, so it is refused.
  if (auto mask = inputs.find("attention_mask"); mask != inputs.end() && g.find_input("attention_mask") < 0) {
    const Tensor& m = mask->second;
    for (int64_t k = 0; k < m.numel(); ++k) {
      int64_t v = m.dtype == DType::I64 ? static_cast<const int64_t*>(m.data)[k]
                  : m.dtype == DType::I32 ? static_cast<const int32_t*>(m.data)[k]
                  : m.dtype == DType::F32 ? int64_t(m.f32()[k]) : 0;
      if (v != 1) return error("attention_mask with padding is not supported (batch 1, all ones)");
    }
    inputs.erase(mask);
  }
  // Integer per-position inputs left out are zeros (token_type_ids), sized
  // from a given input with a `seq` dim.
  int64_t seq = -1;
  for (int v : g.inputs) {
    auto it = inputs.find(g.values[v].name);
    if (it == inputs.end()) continue;
    ARCH_TRY(it->second, conform_input(it->first, it->second, g.values[v]));
    const Shape& want = g.values[v].type.shape;
    for (size_t d = 0; d < want.size(); ++d)
      if (want[d].sym == kSeqSym) seq = it->second.shape[d];
  }
  for (int v : g.inputs) {
    const Value& val = g.values[v];
    if (inputs.count(val.name) || val.name == "positions" || g.is_held(v)) continue;
    bool per_position = val.type.shape.size() == 1 && val.type.shape[0].sym == kSeqSym;
    if (val.type.dtype == DType::I32 && per_position && seq >= 0) inputs[val.name] = Tensor::zeros(DType::I32, {seq});
  }
  return inputs;
}

// An encoder-decoder, as transformers' forward takes it: the encoder on the
// inputs, the decoder on decoder_input_ids (teacher forcing) with what the
// encoder made; outputs from either. A vision-language model the same way:
// its image graph on pixel_values, its token graph on input_ids with the
// features in place (`tokens_from`: the input that holds the token graph's ids).
Result<NamedTensors> forward_encoder_decoder(const Model& m, NamedTensors inputs,
                                             const std::vector<std::string>& outputs, CheckStats* check,
                                             const std::string& tokens_from = "decoder_input_ids") {
  const ModelGraph* tg = m.token_graph();
  auto dec = inputs.find(tokens_from);
  if (dec == inputs.end())
    return error("an encoder-decoder's forward takes decoder_input_ids too (the decoder's tokens, teacher-forced)");
  Tensor tokens = dec->second;
  inputs.erase(dec);
  Session s(m);
  if (check) s.check_with(check);
  NamedTensors enc_in;
  for (const auto& g : m.graphs) {
    if (g.get() == tg) continue;
    ARCH_TRY(NamedTensors in, as_graph_inputs(g->graph, inputs));
    for (auto& [n, t] : in) enc_in[n] = t;
  }
  ARCH_TRY(NamedTensors made, s.encode(std::move(enc_in), outputs));
  auto have = output_names(tg->graph);
  std::vector<std::string> asked;
  for (const auto& n : outputs) {
    if (std::find(have.begin(), have.end(), n) != have.end()) asked.push_back(n);
    else if (!made.count(n)) return error("no graph of the model has an output '" + n + "'");
  }
  ARCH_TRY(NamedTensors out, s.run(tg->name(), {{"tokens", tokens}}, asked));
  for (const auto& n : outputs)
    if (!out.count(n)) out[n] = made.at(n);
  return out;
}

// Whether `inputs` hold what the graphs making the token graph's optional
// state take (a vision-language model's pixel_values).
bool given_state_inputs(const Model& m, const NamedTensors& inputs) {
  for (const auto& name : m.optional_state()) {
    const ModelGraph* p = m.producer_of(name);
    for (int v : p->graph.inputs)
      if (inputs.count(p->graph.values[size_t(v)].name)) return true;
  }
  return false;
}

// Several graphs that do not feed one another (a VAE's encode and
// decode): each asked output from the graph that makes it, on the inputs
// that graph takes.
Result<NamedTensors> forward_each_graph(const Model& m, const NamedTensors& inputs, const std::vector<std::string>& outputs,
                                        CheckStats* check) {
  NamedTensors out;
  for (const auto& g : m.graphs) {
    std::vector<std::string> mine;
    auto have = output_names(g->graph);
    for (const auto& n : outputs)
      if (!out.count(n) && std::find(have.begin(), have.end(), n) != have.end()) mine.push_back(n);
    if (mine.empty()) continue;
    NamedTensors in;
    for (int v : g->graph.inputs)
      if (auto it = inputs.find(g->graph.values[size_t(v)].name); it != inputs.end()) in.insert(*it);
    ARCH_TRY(NamedTensors conformed, as_graph_inputs(g->graph, std::move(in)));
    Session s(m);
    if (check) s.check_with(check);
    ARCH_TRY(NamedTensors made, s.run(g->name(), std::move(conformed), mine));
    for (auto& [n, t] : made) out[n] = t;
  }
  for (const auto& n : outputs)
    if (!out.count(n)) return error("no graph of the model has an output '" + n + "'");
  return out;
}

}  // namespace

Result<NamedTensors> forward(const Model& m, NamedTensors inputs, const std::vector<std::string>& outputs,
                             CheckStats* check, const std::string& graph) {
  if (graph.empty() && m.is_encoder_decoder()) return forward_encoder_decoder(m, std::move(inputs), outputs, check);
  // A vision-language model given an image: its features made first.
  if (graph.empty() && inputs.count("input_ids") && given_state_inputs(m, inputs))
    return forward_encoder_decoder(m, std::move(inputs), outputs, check, "input_ids");
  if (graph.empty() && m.graphs.size() > 1) {
    auto first = output_names(m.main().graph);
    for (const auto& n : outputs)
      if (std::find(first.begin(), first.end(), n) == first.end()) return forward_each_graph(m, inputs, outputs, check);
  }
  ARCH_TRY(const ModelGraph* mg, m.find_graph(graph));
  ARCH_TRY(NamedTensors in, as_graph_inputs(mg->graph, std::move(inputs)));
  Session s(m);
  if (check) s.check_with(check);
  return s.run(mg->name(), std::move(in), outputs);
}

Result<std::map<int, Tensor>> run_with_inputs(const Model& m, NamedTensors inputs, const std::vector<int>& keep,
                                              CheckStats* check) {
  ARCH_TRY(NamedTensors in, as_graph_inputs(m.graph(), std::move(inputs)));
  Session s(m);
  if (check) s.check_with(check);
  return s.run_values(m.main(), std::move(in), keep);
}

}  // namespace arch

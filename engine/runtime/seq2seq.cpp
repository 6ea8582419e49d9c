#include "engine/runtime/seq2seq.h"

#include <algorithm>
#include <chrono>

#include "engine/runtime/generate.h"
#include "engine/runtime/seq2seq_batch.h"
#include "engine/runtime/text_encoder.h"

namespace arch {

Result<Seq2SeqPlan> seq2seq_plan(const Model& m, const Seq2SeqOptions& o) {
  if (!m.is_encoder_decoder()) return error("beam search and its settings run on encoder-decoders (this model is a " + m.family + ")");
  ARCH_TRY(nlohmann::json gen, generation_config(m));
  const nlohmann::json& config = m.checkpoint.config;
  Seq2SeqPlan p;
  ARCH_TRY(p.start, decoder_start_token(m));
  ARCH_TRY(p.rules, generation_rules(gen, config));
  p.rules.eos = eos_ids(m);
  auto value = [&](const char* name) -> const nlohmann::json* {
    if (gen.contains(name) && !gen[name].is_null()) return &gen[name];
    if (config.contains(name) && !config[name].is_null()) return &config[name];
    return nullptr;
  };
  if (const auto* v = value("num_beams"); v && v->is_number_integer()) p.beams = std::max(1, v->get<int>());
  if (const auto* v = value("length_penalty"); v && v->is_number()) p.length_penalty = v->get<double>();
  if (const auto* v = value("early_stopping"); v && v->is_boolean()) p.early_stopping = v->get<bool>();
  if (const auto* v = value("max_new_tokens"); v && v->is_number_integer()) p.max_new_tokens = v->get<int>();
  else if (p.rules.max_length > 1) p.max_new_tokens = p.rules.max_length - 1;
  if (o.beams) p.beams = *o.beams;
  if (o.length_penalty) p.length_penalty = *o.length_penalty;
  if (o.no_repeat_ngram_size) p.rules.no_repeat_ngram_size = *o.no_repeat_ngram_size;
  if (o.forced_bos_token_id) p.rules.forced_bos_token_id = o.forced_bos_token_id;
  if (o.max_new_tokens > 0) {
    p.max_new_tokens = o.max_new_tokens;
    p.rules.max_length = o.max_new_tokens + 1;  // the forced end, where there is one, at the new limit
  }
  // A decoder of learned positions has max_position_embeddings of them (less an offset).
  if (const int64_t positions = text_positions(m); positions > 0 && p.max_new_tokens + 1 > positions)
    return error("the new-token limit " + std::to_string(p.max_new_tokens) + " and the start token exceed the decoder's " +
                 std::to_string(positions) + " positions");
  if (p.beams < 1 || p.beams > 64) return error("--beam-size must be 1..64, not " + std::to_string(p.beams));
  if (p.max_new_tokens < 1 || p.max_new_tokens > 65536) return error("the new-token limit must be 1..65536, not " + std::to_string(p.max_new_tokens));
  return p;
}

Result<Tensor> encoder_input(const Model& m, const std::vector<int32_t>& input_ids) {
  if (input_ids.empty()) return error("the input holds no tokens");
  if (const int64_t positions = text_positions(m); positions > 0 && int64_t(input_ids.size()) > positions)
    return error("an input of " + std::to_string(input_ids.size()) + " tokens exceeds the encoder's " + std::to_string(positions) +
                 " positions");
  Tensor ids = Tensor::zeros(DType::I32, {int64_t(input_ids.size())});
  std::copy(input_ids.begin(), input_ids.end(), ids.i32());
  return ids;
}

LogitsProcessor plan_rules(const Seq2SeqPlan& p) {
  return [&p](std::span<float> scores, const std::vector<int32_t>& generated) {
    std::vector<int32_t> seq{p.start};
    seq.insert(seq.end(), generated.begin(), generated.end());
    p.rules.apply(scores, seq);
  };
}

BeamOptions plan_beams(const Seq2SeqPlan& p) {
  BeamOptions opt;
  opt.width = p.beams;
  opt.max_new = p.max_new_tokens;
  opt.eot = p.rules.eos.empty() ? -1 : p.rules.eos.front();
  opt.transformers = true;
  opt.early_stopping = p.early_stopping;
  opt.length_penalty = p.length_penalty;
  opt.process_scores = plan_rules(p);
  return opt;
}

Result<Seq2SeqResult> seq2seq_generate(const Model& m, const std::vector<int32_t>& input_ids, const Seq2SeqPlan& p) {
  ARCH_TRY(Tensor ids, encoder_input(m, input_ids));
  const int32_t start = p.start;
  const LogitsProcessor rules = plan_rules(p);
  Seq2SeqResult out;
  if (p.beams == 1) {
    // Greedy: the rules only ban or force, so on the raw logits they pick as on log-probabilities.
    Session s(m, int64_t(p.max_new_tokens) + 1);
    GenerateOptions g;
    g.max_new_tokens = p.max_new_tokens;
    g.sampling.greedy = true;
    g.stop_ids = p.rules.eos;
    g.process_logits = rules;
    ARCH_TRY(GenerateResult r, generate_encoded(s, {{"input_ids", ids}}, {start}, g));
    out.tokens = r.tokens;
    double sum = 0;
    for (float lp : r.logprobs) sum += lp;
    out.score = sum / std::pow(double(std::max<size_t>(1, r.tokens.size())), p.length_penalty);
    out.stop_reason = r.stop_reason;
    out.encode_seconds = r.encode_seconds;
    out.decode_seconds = r.prompt_seconds + r.decode_seconds;
    return out;
  }
  // The beams as slots of one batched session, stepped in one call each
  // (the weights read once a step, not once a beam), where the decoder
  // batches; else a session each.
  bool asked = false;
  auto once = [&](bool) -> Result<std::optional<std::vector<int32_t>>> {
    if (asked) return std::optional<std::vector<int32_t>>{};
    asked = true;
    return std::optional<std::vector<int32_t>>{input_ids};
  };
  Status batched = seq2seq_generate_batch(m, p, 1, once, [&](size_t, Seq2SeqResult r) -> Status {
    out = std::move(r);
    return {};
  });
  if (batched.ok()) return out;
  if (asked) return batched.error();
  std::vector<std::unique_ptr<Session>> sessions;
  for (int b = 0; b < p.beams; ++b) sessions.push_back(std::make_unique<Session>(m, int64_t(p.max_new_tokens) + 1));
  const auto t0 = std::chrono::steady_clock::now();
  ARCH_TRY(NamedTensors state, sessions[0]->encode({{"input_ids", ids}}));
  const auto t1 = std::chrono::steady_clock::now();
  const BeamOptions opt = plan_beams(p);
  ARCH_TRY(auto best, beam_search(sessions, state, {start}, opt));
  out.tokens = best.front().tokens;
  out.score = best.front().score;
  out.stop_reason = !out.tokens.empty() && out.tokens.back() == opt.eot ? "eos" : "length";
  out.encode_seconds = std::chrono::duration<double>(t1 - t0).count();
  out.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return out;
}

}  // namespace arch

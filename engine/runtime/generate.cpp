#include "engine/runtime/generate.h"

#include "engine/core/finite.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "importer/checkpoint/canonical.h"

namespace arch {

Result<nlohmann::json> generation_config(const Model& m) {
  auto text = read_side_file(m.checkpoint.dir, "generation_config.json");
  if (!text.ok()) return text.error();
  if (!text->has_value()) return nlohmann::json::object();
  auto g = nlohmann::json::parse(**text, nullptr, false);
  if (!g.is_object()) return error(m.checkpoint.dir + "/generation_config.json: not a JSON object");
  return g;
}

std::vector<int32_t> eos_ids(const Model& m, const Tokenizer* tok) {
  std::vector<int32_t> out;
  auto add = [&](const nlohmann::json& v) {
    if (v.is_number_integer()) out.push_back(v.get<int32_t>());
    if (v.is_array())
      for (auto& x : v)
        if (x.is_number_integer()) out.push_back(x.get<int32_t>());
  };
  if (auto it = m.checkpoint.config.find("eos_token_id"); it != m.checkpoint.config.end()) add(*it);
  // generation_config.json may name more (chat models list their end-of-turn token).
  if (auto g = generation_config(m); g.ok() && g->contains("eos_token_id")) add((*g)["eos_token_id"]);
  if (tok && tok->eos_id()) out.push_back(*tok->eos_id());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status check_logits_finite(std::span<const float> row, int64_t step) {
  if (all_finite(row)) return {};
  return error("the model's logits are not all numbers (NaN or Inf) at step " + std::to_string(step) +
               ": its weights may hold NaN or Inf (archc --check TEMPLATE --model DIR reads every one)");
}

Result<int32_t> decoder_start_token(const Model& m) {
  ARCH_TRY(nlohmann::json g, generation_config(m));
  if (g.contains("decoder_start_token_id") && g["decoder_start_token_id"].is_number_integer())
    return g["decoder_start_token_id"].get<int32_t>();
  auto it = m.checkpoint.config.find("decoder_start_token_id");
  if (it != m.checkpoint.config.end() && it->is_number_integer()) return it->get<int32_t>();
  return error(m.checkpoint.dir + ": neither generation_config.json nor config.json gives decoder_start_token_id, "
                                  "the token an encoder-decoder's decoder starts from");
}

Result<GenerateResult> generate(const Model& m, const std::vector<int32_t>& prompt,
                                const GenerateOptions& opt) {
  if (m.is_encoder_decoder()) {
    if (prompt.empty()) return error("the prompt is empty: give at least one token id");
    ARCH_TRY(int32_t start, decoder_start_token(m));
    Tensor ids = Tensor::zeros(DType::I32, {int64_t(prompt.size())});
    std::copy(prompt.begin(), prompt.end(), ids.i32());
    Session s(m, 1 + opt.max_new_tokens);
    return generate_encoded(s, {{"input_ids", ids}}, {start}, opt);
  }
  Session s(m, int64_t(prompt.size()) + opt.max_new_tokens);
  return generate(s, prompt, opt);
}

Result<GenerateResult> generate_encoded(Session& s, NamedTensors encoder_inputs,
                                        const std::vector<int32_t>& decoder_prompt, const GenerateOptions& opt) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  if (opt.check) s.check_with(opt.check);
  ARCH_TRY_STATUS(s.encode(std::move(encoder_inputs)));
  double encode_seconds = std::chrono::duration<double>(clock::now() - t0).count();
  ARCH_TRY(GenerateResult r, generate(s, decoder_prompt, opt));
  r.encode_seconds = encode_seconds;
  return r;
}

Result<GenerateResult> generate(Session& s, const std::vector<int32_t>& prompt, const GenerateOptions& opt) {
  using clock = std::chrono::steady_clock;
  GenerateResult r;
  r.stop_reason = "length";
  if (prompt.empty()) return error("the prompt is empty: give at least one token id");
  if (s.position() + int64_t(prompt.size()) + opt.max_new_tokens > s.max_context() && s.max_context() > 0)
    return error("the context is too small: " + std::to_string(s.position()) + " positions held + " +
                 std::to_string(prompt.size()) + " prompt tokens + " + std::to_string(opt.max_new_tokens) +
                 " new ones exceed the " + std::to_string(s.max_context()) + " it was sized for");
  // Past the positions a decoder was trained for its output is garbage
  // (learned position tables end there): refused, not run. The last token
  // drawn is never fed back, hence the - 1.
  const int64_t trained = s.model().is_encoder_decoder() ? 0 : s.model().config_int("max_position_embeddings", 0);
  const int64_t reach = s.position() + int64_t(prompt.size()) + opt.max_new_tokens - 1;
  if (trained > 0 && reach > trained) {
    const int64_t room = trained - s.position() - int64_t(prompt.size()) + 1;
    return error("the model was trained for " + std::to_string(trained) + " positions (max_position_embeddings); " +
                 std::to_string(s.position() + int64_t(prompt.size())) + " prompt tokens + " +
                 std::to_string(opt.max_new_tokens) + " new ones go past them" +
                 (room > 0 ? ": ask for at most " + std::to_string(room) + " new tokens" : ""));
  }
  if (opt.check) s.check_with(opt.check);
  Sampler sampler(opt.sampling);
  auto t0 = clock::now();
  std::vector<int32_t> next = prompt;
  for (int k = 0; k < opt.max_new_tokens; ++k) {
    ARCH_TRY(auto outs, s.step(next, {"logits"}, /*last_only=*/true));
    if (k == 0 && opt.after_prompt) opt.after_prompt();
    Tensor& logits = outs.at("logits");
    int64_t vocab = logits.dim(-1), rows = logits.numel() / vocab;
    std::span<float> last(logits.f32() + (rows - 1) * vocab, size_t(vocab));
    ARCH_TRY_STATUS(check_logits_finite(last, k));
    if (opt.process_logits) opt.process_logits(last, r.tokens);
    int32_t tok = sampler.next(last);
    r.logprobs.push_back(token_logprobs(last, tok, 0).logprob);
    if (k == 0) r.prompt_seconds = std::chrono::duration<double>(clock::now() - t0).count();
    r.tokens.push_back(tok);
    if (opt.on_token) opt.on_token(tok);
    if (std::find(opt.stop_ids.begin(), opt.stop_ids.end(), tok) != opt.stop_ids.end()) {
      r.stop_reason = "eos";
      break;
    }
    next = {tok};
  }
  r.decode_seconds = std::chrono::duration<double>(clock::now() - t0).count() - r.prompt_seconds;
  return r;
}

}  // namespace arch

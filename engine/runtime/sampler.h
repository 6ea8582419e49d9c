// Choosing the next token from a row of logits: greedy (argmax, ties to the
// lowest id, as transformers does) or seeded temperature / top-k / top-p,
// after the OpenAI API's adjustments of the ids a request names.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace arch {

struct SamplingOptions {
  bool greedy = true;
  float temperature = 1.0f;
  int top_k = 0;        // 0: all
  float top_p = 1.0f;   // 1: all
  uint64_t seed = 0;
  // Before the draw, as the OpenAI API defines them: each id's bias added
  // (-100 all but bans it, +100 all but forces it); each id this sampler
  // has drawn c times lowered by c * frequency_penalty + presence_penalty.
  float presence_penalty = 0.0f, frequency_penalty = 0.0f;
  std::vector<std::pair<int32_t, float>> logit_bias = {};
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& opt) : opt_(opt), rng_(opt.seed) {}
  int32_t next(std::span<const float> logits);

 private:
  std::span<const float> adjusted(std::span<const float> logits);
  int32_t draw(std::span<const float> logits);

  SamplingOptions opt_;
  std::mt19937_64 rng_;
  std::unordered_map<int32_t, int32_t> drawn_;  // id -> draws so far (kept where a penalty is set)
  std::vector<float> row_;       // the logits adjusted (only where something adjusts them)
  std::vector<int32_t> ids_;    // the candidates (kept across tokens)
  std::vector<float> weights_;   // exp((logit - max) / temperature), by id
};

int32_t argmax(std::span<const float> logits);

// `id`'s log-probability under the row's softmax, and the `top` most likely
// ids with theirs (highest first, ties to the lower id): the model's own
// distribution, before a request's bias, penalties or temperature (what
// the OpenAI API's `logprobs` report).
struct TokenLogprobs {
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;
};
TokenLogprobs token_logprobs(std::span<const float> logits, int32_t id, int top);

}  // namespace arch

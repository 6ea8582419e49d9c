// Choosing the next token from a row of logits: greedy (argmax, ties to the
// lowest id, as transformers does) or seeded temperature / top-k / top-p.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

namespace arch {

struct SamplingOptions {
  bool greedy = true;
  float temperature = 1.0f;
  int top_k = 0;        // 0: all
  float top_p = 1.0f;   // 1: all
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& opt) : opt_(opt), rng_(opt.seed) {}
  int32_t next(std::span<const float> logits);

 private:
  SamplingOptions opt_;
  std::mt19937_64 rng_;
  std::vector<int32_t> ids_;    // the candidates (kept across tokens)
  std::vector<float> weights_;   // exp((logit - max) / temperature), by id
};

int32_t argmax(std::span<const float> logits);

}  // namespace arch

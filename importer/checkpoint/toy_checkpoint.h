// The project's built-in model: a tiny random-weight Llama in the exact
// Hugging Face LlamaForCausalLM layout (config.json + model.safetensors), so
// that every tool can be tried and tested without downloading anything.
//
//   vocab 256, hidden 64, 2 layers, 4 query heads / 2 KV heads of 16,
//   SwiGLU 128, untied lm_head, float32.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "engine/core/error.h"

namespace arch {

// A LlamaStyle model's shape, as config.json spells it. The defaults are the
// toy's.
struct LlamaShape {
  std::string model_type = "llama";
  int64_t vocab_size = 256, hidden_size = 64, num_hidden_layers = 2, num_attention_heads = 4;
  int64_t num_key_value_heads = 2, head_dim = 16, intermediate_size = 128, max_position_embeddings = 256;
  double rope_theta = 10000.0;
  bool tied = false, qkv_bias = false;
  bool bf16 = false;  // weights stored as BF16 (else F32)
};

// Named shapes of real models, for benchmarks anyone can reproduce:
// "toy", "qwen2.5-0.5b", "llama-3.2-1b".
std::optional<LlamaShape> llama_shape(const std::string& name);

// Random weights of a real model's shape (the same draws as the toy's);
// `progress` is told after each tensor is drawn (a 1B shape takes tens of
// seconds).
using ToyProgress = std::function<void(int64_t done, int64_t total, const std::string& name)>;
Status write_random_checkpoint(const std::string& dir, const LlamaShape& shape, uint64_t seed = 0,
                               const ToyProgress& progress = nullptr);

// Random weights of any family's shape, from a spec file (data, not code:
// families/toys/NAME.json holds a config.json, optionally a
// generation_config.json, side files under "files" (a voice's vocab.json),
// and every tensor's name and shape, a `{i<N}` segment standing for layers
// 0 .. N-1 and `{M<=i<N}` for M .. N-1): `archrun toy --shape whisper-base`. Matrices and convolutions
// draw N(0, 1/sqrt(fan_in)), embedding tables (a name with "embed" or
// "shared") N(0, 1), norm weights 1 + N(0, 0.1), other vectors (biases)
// N(0, 0.02); a tensor given as [name, shape, value] holds that value
// (where random weights would make nonsense sizes: a voice's durations).
// Writes DIR/config.json, generation_config.json and the side files (where
// the spec has them) and model.safetensors.
// A spec holding `pipeline` writes a pipeline folder: model_index.json,
// each component from the spec file it names (beside this one), and
// scheduler/scheduler_config.json.
Status write_toy_from_spec(const std::string& spec_path, const std::string& dir, uint64_t seed = 0,
                           bool bf16 = false, const ToyProgress& progress = nullptr);

// Creates `dir` if needed and writes config.json and model.safetensors there.
// Weights are drawn from `seed` by a generator of our own over
// std::mt19937_64, so the same seed gives byte-identical files everywhere the
// C math library rounds alike:
//   linear weights N(0, 1/sqrt(fan_in)), embeddings N(0, 1), norms 1 + N(0, 0.1).
Status write_toy_checkpoint(const std::string& dir, uint64_t seed = 0);

}  // namespace arch

// The project's built-in model: a tiny random-weight Llama in the exact
// Hugging Face LlamaForCausalLM layout (config.json + model.safetensors), so
// that every tool can be tried and tested without downloading anything.
//
//   vocab 256, hidden 64, 2 layers, 4 query heads / 2 KV heads of 16,
//   SwiGLU 128, untied lm_head, float32.
#pragma once

#include <cstdint>
#include <string>

#include "engine/error.h"

namespace arch {

// Creates `dir` if needed and writes config.json and model.safetensors there.
// Weights are drawn from `seed` by a generator of our own over
// std::mt19937_64, so the same seed gives byte-identical files everywhere the
// C math library rounds alike:
//   linear weights N(0, 1/sqrt(fan_in)), embeddings N(0, 1), norms 1 + N(0, 0.1).
Status write_toy_checkpoint(const std::string& dir, uint64_t seed = 0);

}  // namespace arch

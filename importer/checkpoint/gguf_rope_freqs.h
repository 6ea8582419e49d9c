// Llama 3.1's RoPE scaling as llama.cpp's converter stores it: not the
// config's rope_scaling {"rope_type": "llama3", factor, low_freq_factor,
// high_freq_factor, original_max_position_embeddings} but its effect, one
// divisor per rotated pair (rope_freqs.weight: 1 for short wavelengths,
// `factor` for long ones, a blend between). Read back as a rope_scaling that
// reproduces every divisor (Meta's releases' low 1, high 4, 8192 positions
// where they do, else fitted to the blended pairs), and only if one does:
// anything else is refused by name rather than run with other frequencies.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

// `divisors`: [head_dim / 2]; `theta`, `head_dim`: the config's.
Result<nlohmann::json> llama3_rope_scaling(const Tensor& divisors, double theta, int64_t head_dim,
                                           const std::string& where);

}  // namespace arch

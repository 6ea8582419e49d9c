// Rotary position embedding's frequencies, shared by the reference rope op
// and the fast kernels (which must rotate by the very same angles).
#pragma once

#include <vector>

#include "engine/op.h"

namespace arch {

// inv_freq[j] for j in [0, rope_dim/2), as transformers computes it in
// float32: 1 / theta^(2j / rope_dim), then adjusted by the config's
// rope_scaling object (null or "default": none; "linear": / factor;
// "llama3": _compute_llama3_parameters). Any other type is an error naming it.
Result<std::vector<float>> rope_inv_freq(double theta, int64_t rope_dim, const Attrs& scaling);

// cos and sin of the float32 angle pos * inv_freq, rounded to float32 from a
// double evaluation (torch evaluates them in float32 to within an ulp).
void rope_cos_sin(int32_t pos, float inv_freq, float* c, float* s);

}  // namespace arch

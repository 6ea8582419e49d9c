// Rotary position embedding's frequencies, shared by the reference rope op
// and the fast kernels (which must rotate by the very same angles).
#pragma once

#include <vector>

#include "engine/core/op.h"

namespace arch {

// What rope rotates by: inv_freq[j] for j in [0, rope_dim/2), and the factor
// that multiplies cos and sin (yarn's attention factor; 1 otherwise).
struct RopeFrequencies {
  std::vector<float> inv_freq;
  float attention_factor = 1.0f;
};

// The frequencies as transformers 4.56 computes them in float32:
// 1 / theta^(2j / rope_dim), adjusted by the config's rope_scaling object:
//   null or "default": none;  "linear": / factor;
//   "llama3": _compute_llama3_parameters;
//   "dynamic": _compute_dynamic_ntk_parameters as the dynamic_rope_update
//     decorator calls it: the unscaled frequencies while seq_len <=
//     max_position_embeddings, else a base grown with seq_len;
//   "yarn": _compute_yarn_parameters, with its attention factor.
//   "longrope": _compute_longrope_parameters as longrope_frequency_update
//     drives it: short_factor while seq_len <= the original length, else
//     long_factor; original_max_pos is the config's top-level
//     original_max_position_embeddings (Phi-3; 0: none).
//   "proportional": _compute_proportional_rope_parameters (transformers 5.x,
//     Gemma 4), rope_proportional.cpp.
// max_position_embeddings is the config's (0 = unknown: "dynamic" and "yarn"
// then use the object's original_max_position_embeddings, or fail).
// seq_len is the sequence length seen so far, max(position) + 1 (0 = none,
// as at model init); only "dynamic" and "longrope" read it. Any other type
// is an error naming it.
Result<RopeFrequencies> rope_frequencies(double theta, int64_t rope_dim, const Attrs& scaling,
                                         int64_t max_position_embeddings = 0, int64_t seq_len = 0,
                                         int64_t original_max_pos = 0);
// Whether rope_frequencies reads seq_len for this rope_scaling ("dynamic",
// "longrope"); otherwise the attributes alone decide the frequencies.
bool rope_frequencies_read_seq_len(const Attrs& scaling);
// What of seq_len the frequencies depend on: "dynamic" seq_len itself
// past max_position_embeddings (0 up to it), "longrope" 0 up to the
// original length and 1 past it, any other type 0. Equal keys give equal
// frequencies, so a kernel may keep them from call to call.
int64_t rope_frequencies_key(const Attrs& scaling, int64_t max_position_embeddings, int64_t original_max_pos,
                             int64_t seq_len);
// The sequence length past which every position's rotation changes, so keys
// cached before must be recomputed ("longrope": the original length; 0:
// never). transformers' Phi-3 drops its cache there.
int64_t rope_history_changes_past(const Attrs& scaling, int64_t max_position_embeddings, int64_t original_max_pos);

// "proportional" rope (transformers 5.x _compute_proportional_rope_parameters):
// over the whole rope_dim d, the first int(partial_rotary_factor * d // 2)
// pairs rotate with 1 / theta^(2j / d) (the exponent over d, not over the
// rotated part), the other pairs get frequency 0 and pass through; all are
// divided by the object's `factor` (default 1). Pairs stay (j, j + d/2).
Result<RopeFrequencies> proportional_rope_frequencies(double theta, int64_t d, const Attrs& scaling);

// base^(2j / d) in float32 as torch computes it (shared by the rope types).
float rope_power(float base, int64_t j, int64_t d);

// The inverse frequencies alone (the attention factor dropped).
Result<std::vector<float>> rope_inv_freq(double theta, int64_t rope_dim, const Attrs& scaling,
                                         int64_t max_position_embeddings = 0, int64_t seq_len = 0,
                                         int64_t original_max_pos = 0);

// cos and sin of the float32 angle pos * inv_freq, rounded to float32 from a
// double evaluation (torch evaluates them in float32 to within an ulp), then
// each multiplied by attention_factor in float32 as transformers does.
void rope_cos_sin(int32_t pos, float inv_freq, float* c, float* s, float attention_factor = 1.0f);

}  // namespace arch

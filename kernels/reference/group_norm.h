// One group of group_norm (kernels/reference/group_norm.cpp): the reference
// kernel runs the groups in turn, the cpu backend's side by side; each is
// the same arithmetic, so the two agree bit for bit.
#pragma once

#include <cstdint>

namespace arch {

// Group g of X [C, per_channel] normalised into Y (weight w, bias b: null or [C]).
void group_norm_group(const float* X, float* Y, const float* w, const float* b, int64_t C, int64_t per_channel,
                      int64_t groups, int64_t g, float eps);

}  // namespace arch

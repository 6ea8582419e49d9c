// Values that are not numbers: a diverged or damaged checkpoint holds NaN or
// Inf weights (or Inf block scales), and every output made from them is
// garbage. Counted where the values are read anyway (import, archc --check
// --model) and reported, never silently run.
#pragma once

#include <cstdint>
#include <span>

#include "engine/core/tensor.h"

namespace arch {

// NaN or +-Inf values of a tensor as stored: F32, F16, BF16 element by
// element; Q8_0 / Q4_0 rows by their block scales (a block of 32 values
// counts whole). Other types (ints) hold none.
int64_t non_finite_values(const Tensor& t);

// Whether a row of f32 values (a step's logits) is all numbers.
bool all_finite(std::span<const float> row);

}  // namespace arch

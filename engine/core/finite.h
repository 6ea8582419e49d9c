// Values that are not numbers: a diverged or damaged checkpoint holds NaN or
// Inf weights (or Inf block scales), and every output made from them is
// garbage. Counted where the values are read anyway (import, archc --check
// --model) and reported, never silently run. A user's input tensor (an
// image's pixel_values, latents, a context) is checked once where it enters,
// so a NaN is named there instead of coming out as NaN logits or a black
// image.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

// NaN or +-Inf values of a tensor as stored: F32, F16, BF16, F8_E4M3,
// F8_E5M2 element by element; Q8_0 / Q4_0 rows by their block scales (a
// block of 32 values counts whole). Other types (ints) hold none.
int64_t non_finite_values(const Tensor& t);

// The index of the first NaN or +-Inf element of a float tensor (F32, F16,
// BF16, F8_E4M3, F8_E5M2; row-major), or -1 where there is none (or the
// type holds none).
int64_t first_non_finite(const Tensor& t);

// The value at `i` of a tensor first_non_finite found: "NaN", "inf" or
// "-inf"; and that value with where it is: "NaN at index 7 (element
// [0, 0, 1, 3] of [1, 3, 8, 8]; 2 of 192 values are NaN or Inf)".
std::string non_finite_value(const Tensor& t, int64_t i);
std::string non_finite_at(const Tensor& t, int64_t i);

// Where `t` holds a value that is not a number: an error "WHAT holds NaN
// at index 7 (element [0, 0, 1, 3] of [1, 3, 8, 8]; 2 of 192 values are NaN
// or Inf): an input must be all numbers".
Status check_finite(const Tensor& t, const std::string& what);

// Whether a row of f32 values (a step's logits) is all numbers.
bool all_finite(std::span<const float> row);

}  // namespace arch

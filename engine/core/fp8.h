// 8-bit floats, as FP8 checkpoints store their matrices (the OCP FP8
// formats; safetensors' F8_E4M3 and F8_E5M2, torch's float8_e4m3fn and
// float8_e5m2):
//   e4m3fn  1 sign, 4 exponent bits (bias 7), 3 mantissa bits. No
//           infinities: S.1111.111 is NaN, every other code a number, the
//           largest 448.
//   e5m2    1 sign, 5 exponent bits (bias 15), 2 mantissa bits: IEEE half's
//           top byte, exponent 31 Inf (mantissa 0) or NaN.
// Exponent bits 0 are subnormal: mantissa x 2^(1 - bias - mantissa bits).
//
//   float w = f8e4m3_to_f32(0x7e);   // 448
#pragma once

#include <cstdint>

namespace arch {

float f8e4m3_to_f32(uint8_t v);  // exact; NaN for 0x7f and 0xff
float f8e5m2_to_f32(uint8_t v);  // exact

// The nearest e4m3fn to `f`, ties to even (as torch casts). What rounds
// past 448 saturates to +-448 (e4m3fn has no infinity; torch would give
// NaN); NaN gives 0x7f.
uint8_t f32_to_f8e4m3(float f);

// Whether a stored code is NaN (e4m3fn), or NaN or Inf (e5m2).
inline bool f8e4m3_non_finite(uint8_t v) { return (v & 0x7f) == 0x7f; }
inline bool f8e5m2_non_finite(uint8_t v) { return (v & 0x7c) == 0x7c; }

}  // namespace arch

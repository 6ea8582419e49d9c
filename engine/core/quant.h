// Block-quantized weight formats (the canonical model's q8 and q4, written by
// `archrun import --dtype q8|q4`). A [N, K] matrix is stored row by row; a
// row holds its K quantized values, then one F16 scale per block of 32.
//
//   Q8_0: value = scale * (q - 128), q one byte. Offset binary rather than
//         two's complement so that an integer dot product of unsigned weights
//         with signed activations (VNNI's vpdpbusd) needs no sign fix-up.
//   Q4_0: value = scale * (q - 8), q one nibble. The bytes of a row go in
//         groups of 32 covering 64 values: byte i of a group holds value i
//         (low nibble) and value i + 32 (high nibble), so one 32-byte load
//         splits into two whole blocks.
//
// Scales follow the usual rounding: q8 maps the block's largest |x| to 127;
// q4 maps the value of largest magnitude to -8 (so its sign keeps the full
// range).
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/dtype.h"

namespace arch {

constexpr int64_t kQuantBlock = 32;

// Q8_0 or Q4_0: the formats above, which the int8 kernels take.
bool is_quantized(DType t);
// Any type stored in blocks of rows: Q8_0, Q4_0 and the k-quants
// (engine/core/kquant.h). The row functions below take all of them.
bool is_block_quantized(DType t);
// Whether a row of k values can be stored as `t` (k a multiple of its group):
// by quantize_row for Q8_0 / Q4_0, as read from a file for the k-quants.
bool quantizable(DType t, int64_t k);
bool holds_rows_of(DType t, int64_t k);
size_t quant_row_bytes(DType t, int64_t k);
// Byte offset of a row's scales from its start.
inline size_t quant_scales_offset(DType t, int64_t k) { return t == DType::Q4_0 ? size_t(k / 2) : size_t(k); }

void quantize_row(DType t, const float* x, int64_t k, uint8_t* row);  // Q8_0 / Q4_0
void dequantize_row(DType t, const uint8_t* row, int64_t k, float* out);

uint16_t f32_to_f16(float f);  // round to nearest even

}  // namespace arch

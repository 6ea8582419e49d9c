// Weight matrices with rows interleaved, the layouts the cpu kernels read
// (made once at load; files keep core/quant.h's row layout and BF16 rows).
//
// A decode step multiplies every weight row by the same activations. With
// rows stored one after another, each row's dot product is spread over
// vector lanes that must be summed per row. Interleaved, a 64-byte load
// holds a few values of each of 16 rows; one dot-product instruction
// against those values of the activations, broadcast to every lane, adds to
// 16 row sums at once, each lane one row, with no sums across lanes.
//
// Q8_0 / Q4_0: rows in tiles of 16 (the last padded with zero rows). A tile
// is K / 32 blocks one after another, each block its values then the 16
// rows' F16 scales (applied once per block for the 16 rows together):
//   Q8_0x16: 8 groups of 64 bytes; group g holds values 4g..4g+3 of rows
//            0..15 (byte 4r + j: row r, value 4g + j), as offset binary.
//   Q4_0x16: 4 groups of 64 bytes; byte 4r + j of group g holds value
//            4g + j of row r in its low nibble and value 16 + 4g + j in its
//            high nibble.
// Scales and values mean what they mean in core/quant.h.
//
// BF16 (K a multiple of 16): rows in tiles of 64, which is oneDNN's
// BA16a64b2a layout of the weight as B [K, N], so its prompt kernels read
// it as it is. A tile is K / 16 blocks of 2 KiB; block b holds values
// 16b..16b+15 of the 64 rows as 8 pairs, pair q 256 bytes: rows 0..63 in
// turn, each its values 16b + 2q and 16b + 2q + 1 (one vdpbf16ps lane).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/quant.h"
#include "core/tensor.h"

namespace arch {

constexpr int64_t kInterleave = 16;    // rows per tile, Q8_0x16 / Q4_0x16
constexpr int64_t kBf16TileRows = 64;  // rows per tile, BF16x64

bool is_interleaved(DType t);
// Block-quantized, in rows (Q8_0, Q4_0) or in tiles (Q8_0x16, Q4_0x16).
inline bool is_block_quantized(DType t) {
  return is_quantized(t) || t == DType::Q8_0x16 || t == DType::Q4_0x16;
}
// Rows per tile of an interleaved type.
inline int64_t tile_rows(DType t) { return t == DType::BF16x64 ? kBf16TileRows : kInterleave; }
// Whether a [N, k] matrix stored as `rows` has an interleaved form (Q8_0,
// Q4_0; BF16 with k a multiple of 16).
bool interleavable(DType rows, int64_t k);
// Q8_0 -> Q8_0x16, Q4_0 -> Q4_0x16, BF16 -> BF16x64; and back.
DType interleaved_of(DType rows);
DType rows_of(DType interleaved);

// Bytes of one tile, and (quantized types) of one block within it (values,
// then 16 scales).
size_t interleaved_block_bytes(DType t);
inline size_t interleaved_tile_bytes(DType t, int64_t k) {
  return t == DType::BF16x64 ? size_t(k) * 2 * kBf16TileRows : size_t(k / 32) * interleaved_block_bytes(t);
}
inline size_t interleaved_values_bytes(DType t) { return interleaved_block_bytes(t) - 2 * kInterleave; }

// A row-layout Q8_0 / Q4_0 / BF16 matrix [N, K] interleaved (new storage); or
// several of one type and K, their rows one after another (the planner's
// merged projections, made in one copy).
Tensor interleave_rows(const Tensor& rows);
Tensor interleave_rows(const std::vector<const Tensor*>& parts);

// Row r of an interleaved [N, K] matrix, dequantized; and its quantized
// value k as stored (offset binary) and the scale of its block (quantized
// types).
void interleaved_row(DType t, const uint8_t* data, int64_t k, int64_t r, float* out);
uint8_t interleaved_value(DType t, const uint8_t* data, int64_t k, int64_t r, int64_t at);
float interleaved_scale(DType t, const uint8_t* data, int64_t k, int64_t r, int64_t block);

}  // namespace arch

// The cpu backend's layouts of weight matrices: rows interleaved into
// tiles (made once at load, through the prepare-weight hook of the matmul
// and embed kernels; files keep engine/core/quant.h's row layout and BF16 rows).
// A tiled tensor keeps its stored dtype (Q8_0, Q4_0, BF16) and has its
// Tiles in Tensor::layout, registered with the core (register_cpu_tiles)
// so that nbytes(), to_f32 and --check read it.
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
// Scales and values mean what they mean in engine/core/quant.h.
//
// BF16 (K a multiple of 16): rows in tiles of 64, which is oneDNN's
// BA16a64b2a layout of the weight as B [K, N], so its prompt kernels read
// it as it is. A tile is K / 16 blocks of 2 KiB; block b holds values
// 16b..16b+15 of the 64 rows as 8 pairs, pair q 256 bytes: rows 0..63 in
// turn, each its values 16b + 2q and 16b + 2q + 1 (one vdpbf16ps lane).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/quant.h"
#include "engine/core/tensor.h"

namespace arch {

// The layouts, as Tensor::layout holds them (ids of the cpu backend's own).
enum class Tiles : uint8_t { None = 0, Q8_0x16 = 1, Q4_0x16 = 2, BF16x64 = 3 };

constexpr int64_t kInterleave = 16;    // rows per tile, Q8_0x16 / Q4_0x16
constexpr int64_t kBf16TileRows = 64;  // rows per tile, BF16x64

inline Tiles tiles_of(const Tensor& t) { return Tiles(t.layout); }
inline bool is_tiled(const Tensor& t) { return t.layout != 0; }
// Rows per tile.
inline int64_t rows_per_tile(Tiles t) { return t == Tiles::BF16x64 ? kBf16TileRows : kInterleave; }
// Whether a [N, k] matrix stored as `rows` has a tiled form (Q8_0, Q4_0;
// BF16 with k a multiple of 16).
bool tileable(DType rows, int64_t k);
// Q8_0 -> Q8_0x16, Q4_0 -> Q4_0x16, BF16 -> BF16x64; and back.
Tiles tiles_for(DType rows);
// Whether this CPU's kernels read a [N, k] matrix stored as `rows` faster in
// tiles than in rows (tileable, and BF16 tiles with AVX-512 BF16, integer
// ones with VNNI or AVX2): the matmul's prepare hook and the experts'
// stacks ask the same.
bool tiles_pay(DType rows, int64_t k);
DType rows_type(Tiles t);
const char* tiles_name(Tiles t);

// Bytes of one tile, and (quantized types) of one block within it (values,
// then 16 scales).
size_t interleaved_block_bytes(Tiles t);
inline size_t interleaved_tile_bytes(Tiles t, int64_t k) {
  return t == Tiles::BF16x64 ? size_t(k) * 2 * kBf16TileRows : size_t(k / 32) * interleaved_block_bytes(t);
}
inline size_t interleaved_values_bytes(Tiles t) { return interleaved_block_bytes(t) - 2 * kInterleave; }

// A row-layout Q8_0 / Q4_0 / BF16 matrix [N, K] tiled (new storage); or
// several of one type and K, their rows one after another (the planner's
// merged projections, made in one copy).
Tensor interleave_rows(const Tensor& rows);
Tensor interleave_rows(const std::vector<const Tensor*>& parts);

// Row r of a tiled [N, K] matrix, dequantized; and its quantized value k as
// stored (offset binary) and the scale of its block (quantized types).
void interleaved_row(Tiles t, const uint8_t* data, int64_t k, int64_t r, float* out);
uint8_t interleaved_value(Tiles t, const uint8_t* data, int64_t k, int64_t r, int64_t at);
float interleaved_scale(Tiles t, const uint8_t* data, int64_t k, int64_t r, int64_t block);

// Registers the layouts with the core (idempotent; op_table() calls it).
void register_cpu_tiles();

// A stored type and the tiles a loaded model may keep it in: what the tests
// and benchmarks make weights as.
struct WeightForm {
  DType dtype = DType::F32;
  Tiles tiles = Tiles::None;
  bool operator<(const WeightForm& o) const { return dtype != o.dtype ? dtype < o.dtype : tiles < o.tiles; }
};
// "Q8_0", "Q8_0x16".
std::string form_name(WeightForm form);
// Float values stored as `form`: converted, then tiled.
Tensor stored_in(const Tensor& values, WeightForm form);

}  // namespace arch

#include "kernels/cpu/tiles.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "engine/core/quant.h"
#include "engine/core/weight_arena.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

bool tileable(DType rows, int64_t k) {
  return rows == DType::Q8_0 || rows == DType::Q4_0 || (rows == DType::BF16 && k > 0 && k % 16 == 0);
}

bool tiles_pay(DType rows, int64_t k) {
  if (!tileable(rows, k)) return false;
  return tiles_for(rows) == Tiles::BF16x64 ? has_avx512_bf16_dot() : has_avx512_vnni() || cpu_features().avx2;
}

Tiles tiles_for(DType rows) {
  if (rows == DType::BF16) return Tiles::BF16x64;
  return rows == DType::Q4_0 ? Tiles::Q4_0x16 : Tiles::Q8_0x16;
}
DType rows_type(Tiles t) {
  if (t == Tiles::BF16x64) return DType::BF16;
  return t == Tiles::Q4_0x16 ? DType::Q4_0 : DType::Q8_0;
}
const char* tiles_name(Tiles t) {
  switch (t) {
    case Tiles::Q8_0x16: return "Q8_0x16";
    case Tiles::Q4_0x16: return "Q4_0x16";
    case Tiles::BF16x64: return "BF16x64";
    case Tiles::None: break;
  }
  return "rows";
}

size_t interleaved_block_bytes(Tiles t) {
  return size_t(kInterleave) * (t == Tiles::Q4_0x16 ? 16 + 2 : 32 + 2);
}

namespace {

// Byte offset of value `at` of row `lane` within a BF16x64 tile.
size_t bf16_tile_offset(int64_t lane, int64_t at) {
  return size_t((at / 16) * 2048 + (at % 16 / 2) * 256 + lane * 4 + (at % 2) * 2);
}

// Where value `at` of row r sits in its block, and in which nibble.
struct Place {
  size_t byte;
  bool high;
};

Place place_of(Tiles t, int64_t r, int64_t at) {
  const int64_t j = at % kQuantBlock, lane = r % kInterleave;
  if (t == Tiles::Q8_0x16) return {size_t((j / 4) * 64 + lane * 4 + j % 4), false};
  return {size_t((j % 16 / 4) * 64 + lane * 4 + j % 4), j >= 16};
}

const uint8_t* block_of(Tiles t, const uint8_t* data, int64_t k, int64_t r, int64_t block) {
  return data + size_t(r / kInterleave) * interleaved_tile_bytes(t, k) + size_t(block) * interleaved_block_bytes(t);
}

}  // namespace

uint8_t interleaved_value(Tiles t, const uint8_t* data, int64_t k, int64_t r, int64_t at) {
  const Place p = place_of(t, r, at);
  const uint8_t byte = block_of(t, data, k, r, at / kQuantBlock)[p.byte];
  if (t == Tiles::Q8_0x16) return byte;
  return p.high ? byte >> 4 : byte & 0x0F;
}

float interleaved_scale(Tiles t, const uint8_t* data, int64_t k, int64_t r, int64_t block) {
  uint16_t bits;
  std::memcpy(&bits, block_of(t, data, k, r, block) + interleaved_values_bytes(t) + 2 * (r % kInterleave), 2);
  return f16_to_f32(bits);
}

void interleaved_row(Tiles t, const uint8_t* data, int64_t k, int64_t r, float* out) {
  if (t == Tiles::BF16x64) {
    const uint8_t* tile = data + size_t(r / kBf16TileRows) * interleaved_tile_bytes(t, k);
    for (int64_t at = 0; at < k; ++at) {
      uint16_t bits;
      std::memcpy(&bits, tile + bf16_tile_offset(r % kBf16TileRows, at), 2);
      out[at] = bf16_to_f32(bits);
    }
    return;
  }
  const int offset = t == Tiles::Q8_0x16 ? 128 : 8;
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float d = interleaved_scale(t, data, k, r, b);
    for (int64_t at = b * kQuantBlock; at < (b + 1) * kQuantBlock; ++at)
      out[at] = d * float(int(interleaved_value(t, data, k, r, at)) - offset);
  }
}

namespace {

// Tiles [t0, t1) of `to` from the row layout: each block's 16 rows in turn,
// so the destination is written in order.
void interleave_tiles(Tiles to, const std::vector<const uint8_t*>& rows, int64_t k, int64_t t0, int64_t t1,
                      uint8_t* dst) {
  const int64_t n = int64_t(rows.size());
  if (to == Tiles::BF16x64) {  // each pair of a row: 4 bytes
    for (int64_t t = t0; t < t1; ++t) {
      uint8_t* tile = dst + size_t(t) * interleaved_tile_bytes(to, k);
      for (int64_t lane = 0; lane < kBf16TileRows && t * kBf16TileRows + lane < n; ++lane) {
        const uint8_t* row = rows[size_t(t * kBf16TileRows + lane)];
        for (int64_t at = 0; at < k; at += 2) std::memcpy(tile + bf16_tile_offset(lane, at), row + at * 2, 4);
      }
    }
    return;
  }
  const DType from = rows_type(to);
  const size_t values_bytes = interleaved_values_bytes(to), scales_at = quant_scales_offset(from, k);
  for (int64_t t = t0; t < t1; ++t) {
    uint8_t* block = dst + size_t(t) * interleaved_tile_bytes(to, k);
    for (int64_t b = 0; b < k / kQuantBlock; ++b, block += interleaved_block_bytes(to))
      for (int64_t lane = 0; lane < kInterleave && t * kInterleave + lane < n; ++lane) {
        const uint8_t* row = rows[size_t(t * kInterleave + lane)];
        std::memcpy(block + values_bytes + 2 * lane, row + scales_at + 2 * b, 2);
        if (to == Tiles::Q8_0x16) {
          for (int g = 0; g < 8; ++g) std::memcpy(block + g * 64 + lane * 4, row + b * kQuantBlock + 4 * g, 4);
          continue;
        }
        // Q4_0 rows: byte i of each 64-value group holds values i (low
        // nibble) and i + 32 (high), so this block is one nibble of 32 bytes.
        const uint8_t* packed = row + (b / 2) * 32;
        const int shift = int(b % 2) * 4;
        uint8_t pairs[16];  // value q low, 16 + q high
        for (int q = 0; q < 16; ++q)
          pairs[q] = uint8_t(((packed[q] >> shift) & 0x0F) | (((packed[16 + q] >> shift) & 0x0F) << 4));
        for (int g = 0; g < 4; ++g) std::memcpy(block + g * 64 + lane * 4, pairs + 4 * g, 4);
      }
  }
}

}  // namespace

Tensor interleave_rows(const Tensor& rows) { return interleave_rows(std::vector<const Tensor*>{&rows}); }

Tensor interleave_rows(const std::vector<const Tensor*>& parts) {
  static const bool registered = (register_cpu_tiles(), true);  // the core reads what this makes
  (void)registered;
  const DType from = parts.front()->dtype;
  const Tiles to = tiles_for(from);
  const int64_t k = parts.front()->dim(1);
  const size_t row_bytes = from == DType::BF16 ? size_t(k) * 2 : quant_row_bytes(from, k);
  std::vector<const uint8_t*> rows;
  for (const Tensor* part : parts)
    for (int64_t r = 0; r < part->dim(0); ++r)
      rows.push_back(static_cast<const uint8_t*>(part->data) + size_t(r) * row_bytes);
  const int64_t n = int64_t(rows.size()), tiles = (n + rows_per_tile(to) - 1) / rows_per_tile(to);
  Tensor out = weight_zeros(from, {n, k}, uint8_t(to));  // padding rows stay zero: scale 0
  auto* dst = static_cast<uint8_t*>(out.data);
  // Load time: large matrices split across cores.
  const int64_t threads =
      std::clamp<int64_t>(int64_t(out.nbytes() >> 20), 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t i = 1; i < threads; ++i)
    pool.emplace_back(interleave_tiles, to, std::cref(rows), k, tiles * i / threads, tiles * (i + 1) / threads, dst);
  interleave_tiles(to, rows, k, 0, tiles / threads, dst);
  for (std::thread& th : pool) th.join();
  return out;
}

namespace {

// Whole tiles: the last one padded with zero rows.
size_t tiled_bytes(const Tensor& t) {
  const Tiles tiles = tiles_of(t);
  const int64_t rows = t.numel() / t.shape.back(), per = rows_per_tile(tiles);
  return size_t((rows + per - 1) / per) * interleaved_tile_bytes(tiles, t.shape.back());
}

void tiled_row(const Tensor& t, int64_t r, float* out) {
  interleaved_row(tiles_of(t), static_cast<const uint8_t*>(t.data), t.shape.back(), r, out);
}

}  // namespace

void register_cpu_tiles() {
  for (Tiles t : {Tiles::Q8_0x16, Tiles::Q4_0x16, Tiles::BF16x64}) {
    const bool ok = register_layout(uint8_t(t), WeightLayout{tiles_name(t), tiled_bytes, tiled_row, interleave_rows});
    if (!ok) throw std::logic_error(std::string("the layout id of ") + tiles_name(t) + " is taken");
  }
}

std::string form_name(WeightForm form) {
  return form.tiles == Tiles::None ? std::string(dtype_name(form.dtype)) : tiles_name(form.tiles);
}

Tensor stored_in(const Tensor& values, WeightForm form) {
  Tensor rows = convert_to(values, form.dtype);
  return form.tiles == Tiles::None ? rows : interleave_rows(rows);
}

}  // namespace arch

#include "engine/quant_interleaved.h"

#include <cstring>

#include "engine/quant.h"

namespace arch {

bool is_interleaved(DType t) { return t == DType::Q8_0x16 || t == DType::Q4_0x16; }

DType interleaved_of(DType rows) { return rows == DType::Q4_0 ? DType::Q4_0x16 : DType::Q8_0x16; }
DType rows_of(DType interleaved) { return interleaved == DType::Q4_0x16 ? DType::Q4_0 : DType::Q8_0; }

size_t interleaved_block_bytes(DType t) {
  return size_t(kInterleave) * (t == DType::Q4_0x16 ? 16 + 2 : 32 + 2);
}

namespace {

// Where value `at` of row r sits in its block, and in which nibble.
struct Place {
  size_t byte;
  bool high;
};

Place place_of(DType t, int64_t r, int64_t at) {
  const int64_t j = at % kQuantBlock, lane = r % kInterleave;
  if (t == DType::Q8_0x16) return {size_t((j / 4) * 64 + lane * 4 + j % 4), false};
  return {size_t((j % 16 / 4) * 64 + lane * 4 + j % 4), j >= 16};
}

const uint8_t* block_of(DType t, const uint8_t* data, int64_t k, int64_t r, int64_t block) {
  return data + size_t(r / kInterleave) * interleaved_tile_bytes(t, k) + size_t(block) * interleaved_block_bytes(t);
}

}  // namespace

uint8_t interleaved_value(DType t, const uint8_t* data, int64_t k, int64_t r, int64_t at) {
  const Place p = place_of(t, r, at);
  const uint8_t byte = block_of(t, data, k, r, at / kQuantBlock)[p.byte];
  if (t == DType::Q8_0x16) return byte;
  return p.high ? byte >> 4 : byte & 0x0F;
}

float interleaved_scale(DType t, const uint8_t* data, int64_t k, int64_t r, int64_t block) {
  uint16_t bits;
  std::memcpy(&bits, block_of(t, data, k, r, block) + interleaved_values_bytes(t) + 2 * (r % kInterleave), 2);
  return f16_to_f32(bits);
}

void interleaved_row(DType t, const uint8_t* data, int64_t k, int64_t r, float* out) {
  const int offset = t == DType::Q8_0x16 ? 128 : 8;
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float d = interleaved_scale(t, data, k, r, b);
    for (int64_t at = b * kQuantBlock; at < (b + 1) * kQuantBlock; ++at)
      out[at] = d * float(int(interleaved_value(t, data, k, r, at)) - offset);
  }
}

Tensor interleave_rows(const Tensor& rows) {
  const DType to = interleaved_of(rows.dtype);
  const int64_t n = rows.dim(0), k = rows.dim(1);
  Tensor out = Tensor::zeros(to, rows.shape);  // padding rows stay zero: scale 0
  const auto* src = static_cast<const uint8_t*>(rows.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  const size_t row_bytes = quant_row_bytes(rows.dtype, k);
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* row = src + size_t(r) * row_bytes;
    const size_t lane = size_t(r % kInterleave) * 4;
    for (int64_t b = 0; b < k / kQuantBlock; ++b) {
      uint8_t* block = const_cast<uint8_t*>(block_of(to, dst, k, r, b));
      std::memcpy(block + interleaved_values_bytes(to) + 2 * (r % kInterleave),
                  row + quant_scales_offset(rows.dtype, k) + 2 * b, 2);
      if (to == DType::Q8_0x16) {
        for (int g = 0; g < 8; ++g) std::memcpy(block + g * 64 + lane, row + b * kQuantBlock + 4 * g, 4);
        continue;
      }
      // Q4_0 rows: byte i of each 64-value group holds values i (low nibble)
      // and i + 32 (high), so this block's values are one nibble of 32 bytes.
      const uint8_t* packed = row + (b / 2) * 32;
      const int shift = int(b % 2) * 4;
      for (int q = 0; q < 16; ++q) {
        const uint8_t lo = (packed[q] >> shift) & 0x0F, hi = (packed[16 + q] >> shift) & 0x0F;
        block[(q / 4) * 64 + lane + q % 4] = uint8_t(lo | (hi << 4));
      }
    }
  }
  return out;
}

}  // namespace arch

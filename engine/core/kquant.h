// llama.cpp's k-quant weight formats, kept in their own byte layout so a
// GGUF file's tensors are used where they are mapped. A row of K values is
// K/256 super-blocks one after another:
//
//   Q4_K (144 bytes): f16 d, f16 dmin, 12 bytes of eight 6-bit scales and
//         eight 6-bit mins, 128 bytes of 4-bit q. Value = d·sc·q − dmin·m.
//   Q5_K (176 bytes): as Q4_K, plus 32 bytes holding each value's fifth bit.
//   Q6_K (210 bytes): 128 bytes of low 4 bits, 64 of high 2 bits, sixteen
//         int8 scales, f16 d. Value = d·sc·(q − 32).
//
// Every product here is exact in float32 (an f16 times a 6- or 8-bit scale
// times a quant), so any correct dequantization gives the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/core/dtype.h"

namespace arch {

constexpr int64_t kSuperBlock = 256;

bool is_kquant(DType t);
// Bytes per 256 values (0 for another type).
constexpr size_t kquant_block_bytes(DType t) {
  return t == DType::Q4_K ? 144 : t == DType::Q5_K ? 176 : t == DType::Q6_K ? 210 : 0;
}
void dequantize_kquant_row(DType t, const uint8_t* row, int64_t k, float* out);

// Q4_K / Q5_K sub-block j's (0..7) 6-bit scale and min, from the 12 packed
// bytes: the first four pairs whole in the low 6 bits of bytes 0-7, the last
// four split between bytes 8-11 and the top 2 bits of bytes 0-7.
inline void kquant_scale_min(int j, const uint8_t* s, uint8_t& scale, uint8_t& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = uint8_t((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
    min = uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

}  // namespace arch

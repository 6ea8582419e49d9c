#include "engine/core/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/kquant.h"

namespace arch {

bool is_quantized(DType t) { return t == DType::Q8_0 || t == DType::Q4_0; }

bool is_block_quantized(DType t) { return is_quantized(t) || is_kquant(t); }

bool quantizable(DType t, int64_t k) {
  if (t == DType::Q8_0) return k > 0 && k % kQuantBlock == 0;
  if (t == DType::Q4_0) return k > 0 && k % (2 * kQuantBlock) == 0;
  return false;
}

bool holds_rows_of(DType t, int64_t k) {
  return is_kquant(t) ? k > 0 && k % kSuperBlock == 0 : quantizable(t, k);
}

size_t quant_row_bytes(DType t, int64_t k) {
  if (is_kquant(t)) return size_t(k / kSuperBlock) * kquant_block_bytes(t);
  return quant_scales_offset(t, k) + size_t(k / kQuantBlock) * 2;
}

uint16_t f32_to_f16(float f) {
#if defined(__FLT16_MAX__)  // the compiler's _Float16 (gcc; clang from 15 on x86)
  _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
#else  // the same rounding by hand (clang 14, which tools/fuzz.sh builds with)
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  x &= 0x7fffffff;
  if (x >= 0x7f800000) return sign | (x > 0x7f800000 ? 0x7e00 : 0x7c00);  // NaN, Inf
  if (x >= 0x477ff000) return sign | 0x7c00;                              // 65520 and up round to Inf
  if (x < 0x38800000) {  // under 2^-14: a subnormal, counted in 2^-24 steps, ties to even
    float v;
    std::memcpy(&v, &x, 4);
    return sign | uint16_t(std::nearbyint(v * 16777216.0f));
  }
  uint32_t r = x - 0x38000000;  // the exponent rebiased, then 13 mantissa bits rounded off
  r += 0xfff + ((r >> 13) & 1);
  return sign | uint16_t(r >> 13);
#endif
}

void quantize_row(DType t, const float* x, int64_t k, uint8_t* row) {
  uint16_t* scales = reinterpret_cast<uint16_t*>(row + quant_scales_offset(t, k));
  for (int64_t b = 0; b < k / kQuantBlock; ++b) {
    const float* v = x + b * kQuantBlock;
    float amax = 0, extreme = 0;
    for (int64_t i = 0; i < kQuantBlock; ++i)
      if (std::abs(v[i]) > amax) amax = std::abs(v[i]), extreme = v[i];
    float d = t == DType::Q8_0 ? amax / 127.0f : extreme / -8.0f;
    scales[b] = f32_to_f16(d);
    float inv = d != 0 ? 1.0f / d : 0.0f;
    for (int64_t i = 0; i < kQuantBlock; ++i) {
      int64_t at = b * kQuantBlock + i;
      if (t == DType::Q8_0) {
        row[at] = uint8_t(std::clamp<int>(int(std::lround(v[i] * inv)), -127, 127) + 128);
      } else {
        uint8_t q = uint8_t(std::clamp<int>(int(std::lround(v[i] * inv)) + 8, 0, 15));
        int64_t group = at / 64, in_group = at % 64;
        uint8_t& byte = row[group * 32 + in_group % 32];
        byte = in_group < 32 ? uint8_t((byte & 0xF0) | q) : uint8_t((byte & 0x0F) | (q << 4));
      }
    }
  }
}

void dequantize_row(DType t, const uint8_t* row, int64_t k, float* out) {
  if (is_kquant(t)) return dequantize_kquant_row(t, row, k, out);
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(row + quant_scales_offset(t, k));
  for (int64_t at = 0; at < k; ++at) {
    uint16_t bits;
    std::memcpy(&bits, scales + at / kQuantBlock, 2);
    float d = f16_to_f32(bits);
    if (t == DType::Q8_0) {
      out[at] = d * float(int(row[at]) - 128);
    } else {
      int64_t group = at / 64, in_group = at % 64;
      uint8_t byte = row[group * 32 + in_group % 32];
      out[at] = d * float(int(in_group < 32 ? byte & 0x0F : byte >> 4) - 8);
    }
  }
}

}  // namespace arch

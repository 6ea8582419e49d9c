#include "engine/core/dtype.h"

#include <cmath>

namespace arch {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: case DType::F64: return 8;
    case DType::U8: case DType::I8: case DType::BOOL: case DType::Q8_0: case DType::Q4_0:
    case DType::F8_E4M3: case DType::F8_E5M2: case DType::Q4_K: case DType::Q5_K: case DType::Q6_K: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::I32: return "I32";
    case DType::I64: return "I64";
    case DType::U8: return "U8";
    case DType::I8: return "I8";
    case DType::F64: return "F64";
    case DType::BOOL: return "BOOL";
    case DType::Q8_0: return "Q8_0";
    case DType::Q4_0: return "Q4_0";
    case DType::F8_E4M3: return "F8_E4M3";
    case DType::F8_E5M2: return "F8_E5M2";
    case DType::Q4_K: return "Q4_K";
    case DType::Q5_K: return "Q5_K";
    case DType::Q6_K: return "Q6_K";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8,
                  DType::I8, DType::F64, DType::BOOL, DType::Q8_0, DType::Q4_0, DType::F8_E4M3, DType::F8_E5M2,
                  DType::Q4_K, DType::Q5_K, DType::Q6_K})
    if (dtype_name(t) == n) return t;
  return std::nullopt;
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0) v = std::ldexp(float(mant), -24);               // zero / subnormal
  else if (exp == 31) v = mant ? NAN : INFINITY;
  else v = std::ldexp(float(mant | 0x400), int(exp) - 25);
  return sign ? -v : v;
}

uint16_t f32_to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if (std::isnan(f)) return uint16_t((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return uint16_t((bits + rounding) >> 16);
}

}  // namespace arch

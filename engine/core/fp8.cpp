#include "engine/core/fp8.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "engine/core/dtype.h"

namespace arch {

namespace {

// Every e4m3fn code's value, made once: a checkpoint's matrices decode
// billions of them.
std::array<float, 256> e4m3_table() {
  std::array<float, 256> t{};
  for (int v = 0; v < 256; ++v) {
    const int exp = (v >> 3) & 0xf, mant = v & 7;
    float x;
    if (exp == 0xf && mant == 7) x = NAN;
    else if (exp == 0) x = std::ldexp(float(mant), 1 - 7 - 3);
    else x = std::ldexp(float(8 | mant), exp - 7 - 3);
    t[size_t(v)] = (v & 0x80) ? -x : x;
  }
  return t;
}

}  // namespace

float f8e4m3_to_f32(uint8_t v) {
  static const std::array<float, 256> table = e4m3_table();
  return table[v];
}

float f8e5m2_to_f32(uint8_t v) { return f16_to_f32(uint16_t(uint16_t(v) << 8)); }

uint8_t f32_to_f8e4m3(float f) {
  if (std::isnan(f)) return 0x7f;
  const uint8_t sign = std::signbit(f) ? 0x80 : 0;
  const float a = std::fabs(f);
  // 448 is the largest; 464, halfway to the 480 there is not, rounds to it
  // (448's mantissa is even) and so does all above.
  if (a >= 448.f) return sign | 0x7e;
  if (a == 0.f) return sign;
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the leading bit weighs 2^(e-1)
  // The step between neighbours: 2^(e-1-3) among normals, 2^-9 below 2^-6.
  const int step = std::max(e - 1, -6) - 3;
  // Scaling by a power of two is exact; nearbyint rounds ties to even.
  const int q = int(std::nearbyint(std::ldexp(a, -step)));
  if (e - 1 < -6) return uint8_t(sign | q);  // subnormal; q = 8 is the smallest normal, 0x08
  // q in [8, 16]: 16 carries into the exponent, as adding it to the code does.
  return uint8_t(sign | (((step + 3 + 7) << 3) + (q - 8)));
}

}  // namespace arch

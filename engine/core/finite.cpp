#include "engine/core/finite.h"

#include <cmath>
#include <cstring>

#include "engine/core/dtype.h"
#include "engine/core/quant.h"

namespace arch {

namespace {

// bf16 and f16 are non-finite when their exponent bits are all ones.
bool half_non_finite(uint16_t v, bool bf16) { return bf16 ? (v & 0x7f80) == 0x7f80 : (v & 0x7c00) == 0x7c00; }

}  // namespace

int64_t non_finite_values(const Tensor& t) {
  if (!t.data) return 0;
  const int64_t n = t.numel();
  int64_t bad = 0;
  switch (t.dtype) {
    case DType::F32: {
      const float* x = static_cast<const float*>(t.data);
      for (int64_t i = 0; i < n; ++i) bad += !std::isfinite(x[i]);
      return bad;
    }
    case DType::F16:
    case DType::BF16: {
      const auto* x = static_cast<const uint16_t*>(t.data);
      const bool bf16 = t.dtype == DType::BF16;
      for (int64_t i = 0; i < n; ++i) bad += half_non_finite(x[i], bf16);
      return bad;
    }
    case DType::Q8_0:
    case DType::Q4_0: {
      if (t.shape.empty()) return 0;
      const int64_t k = t.shape.back(), rows = n / std::max<int64_t>(k, 1);
      const size_t row_bytes = quant_row_bytes(t.dtype, k), at = quant_scales_offset(t.dtype, k);
      const auto* base = static_cast<const uint8_t*>(t.data);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t b = 0; b < k / 32; ++b) {
          uint16_t scale;
          std::memcpy(&scale, base + size_t(r) * row_bytes + at + size_t(b) * 2, 2);
          bad += half_non_finite(scale, false) ? 32 : 0;
        }
      return bad;
    }
    default:
      return 0;
  }
}

bool all_finite(std::span<const float> row) {
  for (float v : row)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace arch

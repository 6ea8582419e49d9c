#include "engine/core/finite.h"

#include <cmath>
#include <cstring>

#include "engine/core/dtype.h"
#include "engine/core/fp8.h"
#include "engine/core/kquant.h"
#include "engine/core/quant.h"

namespace arch {

namespace {

// bf16 and f16 are non-finite when their exponent bits are all ones.
bool half_non_finite(uint16_t v, bool bf16) { return bf16 ? (v & 0x7f80) == 0x7f80 : (v & 0x7c00) == 0x7c00; }

bool f8_non_finite(uint8_t v, DType t) { return t == DType::F8_E4M3 ? f8e4m3_non_finite(v) : f8e5m2_non_finite(v); }

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
    case DType::F8_E4M3:
    case DType::F8_E5M2: {
      const auto* x = static_cast<const uint8_t*>(t.data);
      for (int64_t i = 0; i < n; ++i) bad += f8_non_finite(x[i], t.dtype);
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
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: {  // a super-block's f16 scales (d, and dmin where there is one)
      const size_t block = kquant_block_bytes(t.dtype);
      const int64_t blocks = n / kSuperBlock;
      const auto* base = static_cast<const uint8_t*>(t.data);
      for (int64_t b = 0; b < blocks; ++b) {
        const uint8_t* p = base + size_t(b) * block;
        uint16_t d, dmin = 0;
        std::memcpy(&d, p + (t.dtype == DType::Q6_K ? 208 : 0), 2);
        if (t.dtype != DType::Q6_K) std::memcpy(&dmin, p + 2, 2);
        bad += half_non_finite(d, false) || half_non_finite(dmin, false) ? kSuperBlock : 0;
      }
      return bad;
    }
    default:
      return 0;
  }
}

int64_t first_non_finite(const Tensor& t) {
  if (!t.data) return -1;
  const int64_t n = t.numel();
  if (t.dtype == DType::F32) {
    const float* x = static_cast<const float*>(t.data);
    for (int64_t i = 0; i < n; ++i)
      if (!std::isfinite(x[i])) return i;
  } else if (t.dtype == DType::F16 || t.dtype == DType::BF16) {
    const auto* x = static_cast<const uint16_t*>(t.data);
    for (int64_t i = 0; i < n; ++i)
      if (half_non_finite(x[i], t.dtype == DType::BF16)) return i;
  } else if (t.dtype == DType::F8_E4M3 || t.dtype == DType::F8_E5M2) {
    const auto* x = static_cast<const uint8_t*>(t.data);
    for (int64_t i = 0; i < n; ++i)
      if (f8_non_finite(x[i], t.dtype)) return i;
  }
  return -1;
}

namespace {

// "NaN", "inf" or "-inf": the value at `i` of a tensor first_non_finite found.
std::string bad_value(const Tensor& t, int64_t i) {
  float v;
  if (t.dtype == DType::F32) v = t.f32()[i];
  else if (t.dtype == DType::F8_E4M3) v = f8e4m3_to_f32(static_cast<const uint8_t*>(t.data)[i]);
  else if (t.dtype == DType::F8_E5M2) v = f8e5m2_to_f32(static_cast<const uint8_t*>(t.data)[i]);
  else {
    const uint16_t h = static_cast<const uint16_t*>(t.data)[i];
    const bool bf16 = t.dtype == DType::BF16;
    v = (h & (bf16 ? 0x007f : 0x03ff)) ? NAN : ((h & 0x8000) ? -INFINITY : INFINITY);
  }
  return std::isnan(v) ? "NaN" : v < 0 ? "-inf" : "inf";
}

}  // namespace

std::string non_finite_value(const Tensor& t, int64_t i) { return bad_value(t, i); }

std::string non_finite_at(const Tensor& t, int64_t i) {
  return bad_value(t, i) + " at index " + std::to_string(i) + " (element " + element_str(t.shape, i) + " of " +
         dims_str(t.shape) + "; " + std::to_string(non_finite_values(t)) + " of " + std::to_string(t.numel()) +
         " values are NaN or Inf)";
}

Status check_finite(const Tensor& t, const std::string& what) {
  const int64_t i = first_non_finite(t);
  if (i < 0) return {};
  return error(what + " holds " + non_finite_at(t, i) + ": an input must be all numbers");
}

bool all_finite(std::span<const float> row) {
  for (float v : row)
    if (!std::isfinite(v)) return false;
  return true;
}

}  // namespace arch

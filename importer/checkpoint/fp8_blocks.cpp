#include "importer/checkpoint/fp8_blocks.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdio>

#include "engine/core/finite.h"
#include "engine/core/fp8.h"
#include "engine/core/json_text.h"

namespace arch {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string typed(const Tensor& t) { return std::string(dtype_name(t.dtype)) + dims_str(t.shape); }

std::string blocks_str(Fp8Blocks b) { return std::to_string(b.rows) + " x " + std::to_string(b.cols); }

// The scales as float32, once their type, shape and values are checked.
Result<Tensor> checked_scales(const Tensor& s, const Tensor& x, Fp8Blocks b, const std::string& scale_where) {
  if (s.dtype != DType::F32 && s.dtype != DType::BF16 && s.dtype != DType::F16)
    return error(scale_where + " is " + typed(s) + "; block scales must be F32, BF16 or F16");
  const Dims want = fp8_scale_shape(x.shape, b);
  if (s.shape != want)
    return error(scale_where + " has shape " + dims_str(s.shape) + ", but the " + typed(x) +
                 " it scales, in blocks of " + blocks_str(b) + ", needs " + dims_str(want));
  const int64_t i = first_non_finite(s);
  if (i >= 0)
    return error(scale_where + " holds " + non_finite_value(s, i) + " at block " +
                 element_str(s.shape, i) + " of " + dims_str(s.shape) + ": a block scale must be a finite number");
  return s.dtype == DType::F32 ? s : to_f32(s);
}

// Why a dequantized tensor holds a value that is not a number: a code that
// is none, or a product past the range of `to`.
Error not_numbers(const Tensor& x, const Tensor& scales, const Tensor& out, Fp8Blocks b, const std::string& where) {
  if (int64_t i = first_non_finite(x); i >= 0)
    return error(where + " holds " + non_finite_at(x, i) + ": FP8 weights must be all numbers");
  const Tensor wide = to_f32(out);
  int64_t i = 0;
  while (i < wide.numel() && std::isfinite(wide.f32()[i])) ++i;
  std::string scale;
  if (scales.data) {
    const int64_t cols = x.shape.back(), rows = x.shape[x.shape.size() - 2], r = i / cols, c = i % cols;
    const int64_t scale_row = (r / rows) * ceil_div(rows, b.rows) + (r % rows) / b.rows;  // r: a row of all matrices
    const int64_t block = scale_row * ceil_div(cols, b.cols) + c / b.cols;
    scale = " times its block scale " + num(scales.f32()[block]);
  }
  const uint8_t code = static_cast<const uint8_t*>(x.data)[i];
  return error(where + ": element " + element_str(x.shape, i) + " (" +
               num(x.dtype == DType::F8_E4M3 ? f8e4m3_to_f32(code) : f8e5m2_to_f32(code)) + scale +
               ") is past the range of " + std::string(dtype_name(out.dtype)));
}

}  // namespace

Result<Fp8Blocks> fp8_block_size(const nlohmann::json& config, const std::string& where) {
  Fp8Blocks b;
  auto q = config.is_object() ? config.find("quantization_config") : config.end();
  if (q == config.end() || q->is_null()) return b;
  if (!q->is_object())
    return error(where + ": quantization_config is " + json_type_name(*q) + ", expected an object");
  auto w = q->find("weight_block_size");
  if (w == q->end() || w->is_null()) return b;
  auto positive = [](const nlohmann::json& v) {  // JSON keeps non-negative integers unsigned
    return v.is_number_unsigned() && v.get<uint64_t>() >= 1 && v.get<uint64_t>() <= INT32_MAX;
  };
  if (!w->is_array() || w->size() != 2 || !positive((*w)[0]) || !positive((*w)[1]))
    return error(where + ": quantization_config.weight_block_size " + w->dump() +
                 " must be two positive integers [rows, cols]");
  b.rows = (*w)[0].get<int64_t>();
  b.cols = (*w)[1].get<int64_t>();
  return b;
}

Dims fp8_scale_shape(const Dims& shape, Fp8Blocks b) {
  Dims s = shape;
  s[s.size() - 2] = ceil_div(s[s.size() - 2], b.rows);
  s.back() = ceil_div(s.back(), b.cols);
  return s;
}

Result<Tensor> dequantize_fp8(const Tensor& x, const Tensor* scale_inv, Fp8Blocks b, DType to,
                              const std::string& where, const std::string& scale_where) {
  if (x.dtype != DType::F8_E4M3 && x.dtype != DType::F8_E5M2)
    return error(where + " is " + typed(x) + ", not an FP8 type (F8_E4M3, F8_E5M2)");
  if (to != DType::F32 && to != DType::BF16)
    return error(where + ": FP8 values widen to F32 or BF16, not " + std::string(dtype_name(to)));
  if (!scale_inv && x.dtype == DType::F8_E4M3)
    return error(where + " is " + typed(x) + ", whose codes mean nothing without their block scales, but there is no " +
                 scale_where);
  if (scale_inv && x.shape.size() < 2)
    return error(where + " is " + typed(x) + ", but block scales (" + scale_where + ") are for matrices");
  Tensor scales;
  if (scale_inv) {
    ARCH_TRY(scales, checked_scales(*scale_inv, x, b, scale_where));
  }

  float lut[256];  // every code's value, in the tensor's format
  for (int v = 0; v < 256; ++v)
    lut[v] = x.dtype == DType::F8_E4M3 ? f8e4m3_to_f32(uint8_t(v)) : f8e5m2_to_f32(uint8_t(v));
  Tensor out = Tensor::zeros(to, x.shape);
  const int64_t cols = x.shape.empty() ? 1 : x.shape.back();
  const int64_t rows = x.shape.size() < 2 ? 1 : x.shape[x.shape.size() - 2];
  const int64_t all_rows = cols > 0 ? x.numel() / cols : 0;
  const int64_t scale_rows = ceil_div(rows, b.rows), scale_cols = ceil_div(cols, b.cols);
  const auto* codes = static_cast<const uint8_t*>(x.data);
  bool numbers = true;
  for (int64_t g = 0; g < all_rows; ++g) {
    // Row g is row g % rows of matrix g / rows; its scales are one row of theirs.
    const float* srow =
        scales.data ? scales.f32() + ((g / rows) * scale_rows + (g % rows) / b.rows) * scale_cols : nullptr;
    const uint8_t* in = codes + g * cols;
    for (int64_t c0 = 0; c0 < cols; c0 += b.cols) {
      const float s = srow ? srow[c0 / b.cols] : 1.f;
      const int64_t c1 = std::min(cols, c0 + b.cols);
      if (to == DType::F32) {
        float* o = out.f32() + g * cols;
        for (int64_t c = c0; c < c1; ++c) {
          o[c] = lut[in[c]] * s;
          numbers &= std::fabs(o[c]) <= FLT_MAX;
        }
      } else {
        uint16_t* o = static_cast<uint16_t*>(out.data) + g * cols;
        for (int64_t c = c0; c < c1; ++c) {
          o[c] = f32_to_bf16(lut[in[c]] * s);
          numbers &= (o[c] & 0x7f80) != 0x7f80;
        }
      }
    }
  }
  if (!numbers) return not_numbers(x, scales, out, b, where);
  return out;
}

Result<Fp8Matrix> quantize_fp8(const Tensor& x, Fp8Blocks b, const std::string& where) {
  if (x.dtype != DType::F32 && x.dtype != DType::F16 && x.dtype != DType::BF16)
    return error(where + " is " + typed(x) + "; only float matrices (F32, F16, BF16) quantize to FP8");
  if (x.shape.size() < 2) return error(where + " is " + typed(x) + ", but FP8 blocks are for matrices");
  if (int64_t i = first_non_finite(x); i >= 0)
    return error(where + " holds " + non_finite_at(x, i) + ": only numbers quantize");
  const Tensor f = x.dtype == DType::F32 ? x : to_f32(x);
  Fp8Matrix m{Tensor::zeros(DType::F8_E4M3, x.shape), Tensor::zeros(DType::F32, fp8_scale_shape(x.shape, b))};
  const int64_t cols = x.shape.back(), rows = x.shape[x.shape.size() - 2];
  const int64_t matrices = rows * cols > 0 ? x.numel() / (rows * cols) : 0;
  const int64_t scale_rows = ceil_div(rows, b.rows), scale_cols = ceil_div(cols, b.cols);
  auto* codes = static_cast<uint8_t*>(m.values.data);
  for (int64_t n = 0; n < matrices; ++n)
    for (int64_t br = 0; br < scale_rows; ++br)
      for (int64_t bc = 0; bc < scale_cols; ++bc) {
        const int64_t r0 = br * b.rows, r1 = std::min(rows, r0 + b.rows);
        const int64_t c0 = bc * b.cols, c1 = std::min(cols, c0 + b.cols);
        const int64_t base = n * rows * cols;
        float amax = 0;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c) amax = std::max(amax, std::fabs(f.f32()[base + r * cols + c]));
        const float s = amax / 448.f;
        m.scale_inv.f32()[(n * scale_rows + br) * scale_cols + bc] = s;
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < c1; ++c)
            codes[base + r * cols + c] = s > 0 ? f32_to_f8e4m3(f.f32()[base + r * cols + c] / s) : 0;
      }
  return m;
}

}  // namespace arch

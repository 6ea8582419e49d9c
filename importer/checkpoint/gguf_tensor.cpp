#include "importer/checkpoint/gguf_tensor.h"

#include <cstring>

#include "engine/core/quant.h"

namespace arch {

const char* const kGgufTypesRun = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K";

namespace {

// ggml's Q8_0 block: f16 d, then 32 int8 q; value = d·q.
void repack_q8_0(const uint8_t* src, int64_t k, uint8_t* row) {
  auto* scales = reinterpret_cast<uint16_t*>(row + quant_scales_offset(DType::Q8_0, k));
  for (int64_t b = 0; b < k / 32; ++b, src += 34) {
    std::memcpy(scales + b, src, 2);
    for (int i = 0; i < 32; ++i) row[b * 32 + i] = uint8_t(int8_t(src[2 + i]) + 128);
  }
}

// ggml's Q4_0 block: f16 d, then 16 bytes whose low nibbles are values
// 0-15 and high nibbles 16-31; value = d·(q − 8). As Q4_0 rows when they
// split into groups of 64, else as Q8_0 rows (the same values, exactly).
void repack_q4_0(const uint8_t* src, int64_t k, DType to, uint8_t* row) {
  auto* scales = reinterpret_cast<uint16_t*>(row + quant_scales_offset(to, k));
  if (to == DType::Q4_0) std::memset(row, 0, size_t(k / 2));
  for (int64_t b = 0; b < k / 32; ++b, src += 18) {
    std::memcpy(scales + b, src, 2);
    for (int i = 0; i < 32; ++i) {
      const uint8_t q = i < 16 ? src[2 + i] & 0x0F : src[2 + i - 16] >> 4;
      const int64_t at = b * 32 + i;
      if (to == DType::Q8_0) {
        row[at] = uint8_t(int(q) - 8 + 128);
      } else {
        uint8_t& byte = row[at / 64 * 32 + at % 32];
        byte |= at % 64 < 32 ? q : uint8_t(q << 4);
      }
    }
  }
}

}  // namespace

Result<Tensor> gguf_tensor(const GgufFile& file, const GgufTensorInfo& info) {
  Dims shape(info.ne.rbegin(), info.ne.rend());
  auto* data = const_cast<std::byte*>(info.data);
  auto view = [&](DType dtype) -> Tensor {
    Tensor t = Tensor::view(dtype, shape, data, file.file);
    t.mapped = true;
    if (reinterpret_cast<uintptr_t>(data) % dtype_size(dtype) == 0) return t;
    Tensor copy = Tensor::zeros(dtype, shape);  // an alignment below the element's size
    std::memcpy(copy.data, data, info.bytes);
    return copy;
  };
  switch (info.type) {
    case 0: return view(DType::F32);
    case 1: return view(DType::F16);
    case 30: return view(DType::BF16);
    case 12: return view(DType::Q4_K);
    case 13: return view(DType::Q5_K);
    case 14: return view(DType::Q6_K);
    case 8:
    case 2: {
      const int64_t k = shape.back(), rows = numel(shape) / k;
      const DType to = info.type == 8 || !quantizable(DType::Q4_0, k) ? DType::Q8_0 : DType::Q4_0;
      Tensor out = Tensor::zeros(to, shape);
      const size_t in_row = size_t(k / 32) * (info.type == 8 ? 34 : 18), out_row = quant_row_bytes(to, k);
      const auto* src = reinterpret_cast<const uint8_t*>(info.data);
      auto* dst = static_cast<uint8_t*>(out.data);
      for (int64_t r = 0; r < rows; ++r) {
        if (info.type == 8) repack_q8_0(src + r * in_row, k, dst + r * out_row);
        else repack_q4_0(src + r * in_row, k, to, dst + r * out_row);
      }
      return out;
    }
    default:
      return error(file.path + ": tensor '" + info.name + "' is " + ggml_type_name(info.type) +
                   ", a type Archetype does not run (it runs " + kGgufTypesRun +
                   "); quantize the model to one of those, e.g. llama-quantize ... Q4_K_M");
  }
}

Tensor reorder_rows(const Tensor& t, const std::vector<int64_t>& order) {
  Tensor out = Tensor::zeros(t.dtype, t.shape);
  const size_t row = t.nbytes() / size_t(t.shape[0]);
  for (size_t r = 0; r < order.size(); ++r)
    std::memcpy(static_cast<uint8_t*>(out.data) + r * row, static_cast<const uint8_t*>(t.data) + order[r] * row, row);
  return out;
}

}  // namespace arch

#include "importer/checkpoint/gguf_tensor.h"

#include <cstring>

#include "engine/core/quant.h"

namespace arch {

const char* const kGgufTypesRun = "F32, F16, BF16, Q8_0, Q4_0, Q5_0, IQ4_NL, Q4_1, Q5_1, Q4_K, Q5_K, Q6_K";

namespace {

// ggml's 32-value blocks whose values are d·v with v an integer in
// [-128, 127]: Q8_0 (f16 d, 32 int8), Q4_0 (f16 d, 16 bytes of nibbles,
// low ones values 0-15, v = q − 8), Q5_0 (f16 d, 32 bits of fifth bits,
// the nibbles; v = q − 16), IQ4_NL (f16 d, nibbles indexing a table).
// Each is Archetype's Q8_0 exactly: the same scale, v + 128 a byte.
constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

size_t block_bytes(uint32_t type) { return type == 8 ? 34 : type == 6 ? 22 : 18; }

void block_values(uint32_t type, const uint8_t* b, int v[32]) {
  const uint8_t* nibbles = b + (type == 6 ? 6 : 2);
  uint32_t high = 0;
  if (type == 6) std::memcpy(&high, b + 2, 4);
  for (int i = 0; i < 32; ++i) {
    if (type == 8) {
      v[i] = int8_t(b[2 + i]);
      continue;
    }
    const int q = i < 16 ? nibbles[i] & 0x0F : nibbles[i - 16] >> 4;
    if (type == 2) v[i] = q - 8;
    else if (type == 6) v[i] = (q | int(high >> i & 1) << 4) - 16;
    else v[i] = kIq4nlValues[q];
  }
}

// A row of such blocks as Archetype's Q8_0 row, or (Q4_0 whose row splits
// into groups of 64) as its Q4_0 row.
void repack_row(uint32_t type, const uint8_t* src, int64_t k, DType to, uint8_t* row) {
  auto* scales = reinterpret_cast<uint16_t*>(row + quant_scales_offset(to, k));
  if (to == DType::Q4_0) std::memset(row, 0, size_t(k / 2));
  int v[32];
  for (int64_t b = 0; b < k / 32; ++b, src += block_bytes(type)) {
    std::memcpy(scales + b, src, 2);
    block_values(type, src, v);
    for (int i = 0; i < 32; ++i) {
      const int64_t at = b * 32 + i;
      if (to == DType::Q8_0) {
        row[at] = uint8_t(v[i] + 128);
      } else {
        const uint8_t q = uint8_t(v[i] + 8);
        row[at / 64 * 32 + at % 32] |= at % 64 < 32 ? q : uint8_t(q << 4);
      }
    }
  }
}

// Q4_1 / Q5_1: d·q + m, an offset no one-scale row holds: widened to
// float32 (each value one product and one sum, as ggml computes it).
void widen_row_with_min(uint32_t type, const uint8_t* src, int64_t k, float* out) {
  const bool five = type == 7;
  for (int64_t b = 0; b < k / 32; ++b, src += five ? 24 : 20, out += 32) {
    const float d = f16_at(src), m = f16_at(src + 2);
    uint32_t high = 0;
    if (five) std::memcpy(&high, src + 4, 4);
    const uint8_t* nibbles = src + (five ? 8 : 4);
    for (int i = 0; i < 32; ++i) {
      int q = i < 16 ? nibbles[i] & 0x0F : nibbles[i - 16] >> 4;
      if (five) q |= int(high >> i & 1) << 4;
      out[i] = float(q) * d + m;
    }
  }
}

// A tensor read into a copy no longer needs its pages of the mapping: they
// would stay resident beside the copy (Qwen 0.5B's Q4_K_M, its Q5_0 tensors
// repacked: 1.2 GB peak, the file's pages and the copies).
void release_source(const GgufTensorInfo& info) {
  Tensor source = Tensor::view(DType::U8, {int64_t(info.bytes)}, const_cast<std::byte*>(info.data), nullptr);
  source.mapped = true;
  release_pages(source);
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
    case 8:   // Q8_0
    case 2:   // Q4_0
    case 6:   // Q5_0
    case 20: {  // IQ4_NL
      const int64_t k = shape.back(), rows = numel(shape) / k;
      const DType to = info.type == 2 && quantizable(DType::Q4_0, k) ? DType::Q4_0 : DType::Q8_0;
      Tensor out = Tensor::zeros(to, shape);
      const size_t in_row = size_t(k / 32) * block_bytes(info.type), out_row = quant_row_bytes(to, k);
      const auto* src = reinterpret_cast<const uint8_t*>(info.data);
      auto* dst = static_cast<uint8_t*>(out.data);
      for (int64_t r = 0; r < rows; ++r) repack_row(info.type, src + r * in_row, k, to, dst + r * out_row);
      release_source(info);
      return out;
    }
    case 3:   // Q4_1
    case 7: {  // Q5_1
      const int64_t k = shape.back(), rows = numel(shape) / k;
      Tensor out = Tensor::zeros(DType::F32, shape);
      const size_t in_row = size_t(k / 32) * (info.type == 7 ? 24 : 20);
      const auto* src = reinterpret_cast<const uint8_t*>(info.data);
      for (int64_t r = 0; r < rows; ++r) widen_row_with_min(info.type, src + r * in_row, k, out.f32() + r * k);
      release_source(info);
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
  if (t.shape.empty() || t.shape[0] == 0) return out;
  const size_t row = t.nbytes() / size_t(t.shape[0]);
  for (size_t r = 0; r < order.size(); ++r)
    std::memcpy(static_cast<uint8_t*>(out.data) + r * row, static_cast<const uint8_t*>(t.data) + order[r] * row, row);
  return out;
}

}  // namespace arch

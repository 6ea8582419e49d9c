// Element types a tensor can hold, as safetensors spells them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace arch {

// The types a file stores. Append-only: the numeric values are not
// persisted, but keep order stable so dumps and logs stay comparable.
// Q8_0 and Q4_0 are block-quantized matrices (engine/core/quant.h): a tensor of
// them has its logical [N, K] shape and quant_row_bytes per row. A
// backend's own arrangement of such a matrix (the cpu backend's tiles of
// interleaved rows) is not a type but a Tensor::layout.
// Q4_K, Q5_K and Q6_K are llama.cpp's k-quants in their own layout
// (engine/core/kquant.h), what GGUF files mostly hold.
// F8_E4M3 and F8_E5M2 are 8-bit floats (engine/core/fp8.h), what FP8
// checkpoints store their matrices in; the importer widens them at load
// (importer/checkpoint/fp8_weights.h), so no kernel reads them.
enum class DType : uint8_t { F32, F16, BF16, I32, I64, U8, I8, F64, BOOL, Q8_0, Q4_0, F8_E4M3, F8_E5M2, Q4_K, Q5_K, Q6_K };

size_t dtype_size(DType t);  // per element; 1 for the block-quantized types (see storage_bytes)
std::string_view dtype_name(DType t);                 // "F32", "BF16", ...
std::optional<DType> dtype_from_name(std::string_view name);  // safetensors spelling

// IEEE half and bfloat16 to float, exactly.
inline float bf16_to_f32(uint16_t v) {
  uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float f16_to_f32(uint16_t v);
// The f16 stored at `p` (little-endian, any alignment), as float.
inline float f16_at(const void* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return f16_to_f32(bits);
}
// Round-to-nearest-even, as torch does when it casts to bfloat16.
uint16_t f32_to_bf16(float f);

}  // namespace arch

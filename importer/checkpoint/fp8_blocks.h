// Block-scaled FP8 matrices, as DeepSeek-V3's checkpoints store them: a
// matrix X of F8_E4M3 codes, shape [..., rows, cols], beside a float32
// X_scale_inv of shape [..., ceil(rows / br), ceil(cols / bc)]; element
// (r, c) is fp8(r, c) * X_scale_inv[r / br][c / bc], the blocks at the
// bottom and right edges partial. The block (br, bc) is config.json's
// quantization_config.weight_block_size, 128 x 128 where it is absent.
// Both directions: dequantize (loading) and quantize (writing such a file).
//
//   ARCH_TRY(Fp8Blocks b, fp8_block_size(config, "ckpt/config.json"));
//   ARCH_TRY(Tensor w, dequantize_fp8(x, &scale, b, DType::F32, "a.safetensors: tensor 'X'",
//                                     "a.safetensors: tensor 'X_scale_inv'"));
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct Fp8Blocks {
  int64_t rows = 128, cols = 128;
};

// config.json's quantization_config.weight_block_size ([rows, cols], both
// >= 1), or 128 x 128 where there is none; errors name `where`.
Result<Fp8Blocks> fp8_block_size(const nlohmann::json& config, const std::string& where);

// The shape the scales of a [..., rows, cols] tensor take:
// [..., ceil(rows / br), ceil(cols / bc)]. `shape` has at least 2 dims.
Dims fp8_scale_shape(const Dims& shape, Fp8Blocks b);

// `x` (F8_E4M3 or F8_E5M2) times its block scales `scale_inv` (F32, BF16 or
// F16), as `to` (F32; or BF16, rounded to nearest even). Without scales
// (null) an F8_E5M2 tensor reads element by element; F8_E4M3 is refused, its
// codes meaning nothing without them. Refused as well, naming the tensor
// (`where`: "FILE: tensor 'X'") or its scales (`scale_where`): a NaN code
// (or an Inf one, in E5M2), scales of the wrong shape or type, a scale that
// is not a finite number, a product past float's range.
Result<Tensor> dequantize_fp8(const Tensor& x, const Tensor* scale_inv, Fp8Blocks b, DType to,
                              const std::string& where, const std::string& scale_where);

// A float matrix (F32, F16 or BF16, at least 2-D) as F8_E4M3 codes and their
// F32 scales, block by block: scale_inv = max|block| / 448, each value
// x / scale_inv rounded to the nearest e4m3fn (ties to even); an all-zero
// block has scale 0 and codes 0. NaN or Inf values are refused, naming
// `where`.
struct Fp8Matrix {
  Tensor values, scale_inv;
};
Result<Fp8Matrix> quantize_fp8(const Tensor& x, Fp8Blocks b, const std::string& where);

}  // namespace arch

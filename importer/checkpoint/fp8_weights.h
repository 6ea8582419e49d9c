// FP8 checkpoints loaded as floats (DeepSeek-V3's own files): every
// F8_E4M3 or F8_E5M2 tensor `X` is dequantized with its block scales
// `X_scale_inv` (fp8_blocks.h; the block from config.json's
// quantization_config.weight_block_size, else 128 x 128) into the type the
// checkpoint's other floats have: BF16 where they all are BF16 (as
// DeepSeek-V3's embeddings and norms are), else F32. The scales are
// consumed: they leave the checkpoint, so a template neither reads them nor
// sees them as unused, and so does a quantization_config whose quant_method
// is "fp8". A checkpoint without F8 tensors is left as it is.
//
//   ARCH_TRY_STATUS(dequantize_fp8_weights(ckpt));   // load_checkpoint does
#pragma once

#include "engine/core/error.h"
#include "importer/checkpoint/checkpoint.h"

namespace arch {

// Errors name the file and tensor: an F8_E4M3 tensor without scales, scales
// of the wrong shape or type or not finite, a NaN code, block scales beside
// a tensor that is not FP8 (what its values mean would be a guess), a
// malformed weight_block_size.
Status dequantize_fp8_weights(Checkpoint& ckpt);

}  // namespace arch

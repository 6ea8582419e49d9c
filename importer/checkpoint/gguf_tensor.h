// A GGUF tensor as Archetype holds it: the logical shape (ggml's dims
// reversed: [out, in] for a matrix, as Hugging Face stores it) and a type
// the kernels read. F32, F16, BF16 and the k-quants (Q4_K, Q5_K, Q6_K) are
// views of the mapping, as stored; Q8_0, Q4_0, Q5_0 and IQ4_NL blocks (what
// llama-quantize falls back to for rows that do not split into 256) are
// repacked into Archetype's Q8_0 / Q4_0 rows of the same values
// (engine/core/quant.h), losslessly; Q4_1 and Q5_1 (d·q + m) widened to
// float32. Every other ggml type (Q2_K, Q3_K, the IQ types but IQ4_NL, ...)
// is refused by name.
#pragma once

#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"
#include "importer/checkpoint/gguf.h"

namespace arch {

// The ggml types gguf_tensor takes, for messages: "F32, F16, ...".
extern const char* const kGgufTypesRun;

Result<Tensor> gguf_tensor(const GgufFile& file, const GgufTensorInfo& info);

// `t` with its rows (first dim) reordered: row r of the result is row
// order[r] of `t`. Block-quantized rows move whole.
Tensor reorder_rows(const Tensor& t, const std::vector<int64_t>& order);

}  // namespace arch

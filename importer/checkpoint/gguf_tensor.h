// A GGUF tensor as Archetype holds it: the logical shape (ggml's dims
// reversed: [out, in] for a matrix, as Hugging Face stores it) and a type
// the kernels read. F32, F16, BF16 and the k-quants (Q4_K, Q5_K, Q6_K) are
// views of the mapping, as stored; Q8_0 and Q4_0 blocks are repacked into
// Archetype's rows of the same values (engine/core/quant.h), losslessly.
// Every other ggml type is refused by name.
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

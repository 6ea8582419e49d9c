// The safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, ...,
// optional "__metadata__": {string: string}}), then the raw little-endian
// data; offsets count from the start of the data section.
//
//   ARCH_TRY(auto file, read_safetensors("model.safetensors"));
//   const Tensor& wq = file.tensors.at("model.layers.0.self_attn.q_proj.weight");
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct SafetensorsFile {
  std::string path;
  std::map<std::string, Tensor> tensors;  // views into the mapped file (owner = the mapping)
  std::map<std::string, std::string> metadata;
};

// Maps the file and checks every header entry; errors name the file and the
// tensor. A tensor whose offset is not a multiple of its element size is
// copied into aligned storage rather than handed out misaligned.
Result<SafetensorsFile> read_safetensors(const std::string& path);

// Writes tensors contiguously in the given order; the header is padded with
// spaces so that the data section starts at a multiple of 8 bytes.
Status write_safetensors(const std::string& path,
                         const std::vector<std::pair<std::string, Tensor>>& tensors,
                         const std::map<std::string, std::string>& metadata = {});

// The same with each tensor's bytes made only when it is written, so a
// whole model need not be held at once (import converts one tensor at a
// time): `layout` gives the names, dtypes and shapes (data may be null) and
// produce(i) tensor i itself, of the same size.
using TensorSource = std::function<Result<Tensor>(size_t i)>;
Status write_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& layout,
                         const std::map<std::string, std::string>& metadata, const TensorSource& produce);

}  // namespace arch

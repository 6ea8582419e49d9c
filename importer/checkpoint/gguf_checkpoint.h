// A GGUF file read as a Hugging Face checkpoint: the config from its
// metadata and its tensors under the Hugging Face names, both through the
// architecture's name map (gguf_names.h); the rows llama.cpp interleaved
// for its RoPE put back; Q8_0 / Q4_0 repacked, the rest mapped as stored
// (gguf_tensor.h). A tensor the map does not name keeps its GGUF name (the
// load then says no graph reads it).
#pragma once

#include <string>

#include "engine/core/error.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/gguf.h"
#include "importer/checkpoint/gguf_names.h"

namespace arch {

Result<Checkpoint> load_gguf_checkpoint(const std::string& path, const std::string& maps_dir);

// What `archrun info` shows of a GGUF file: its version, architecture,
// the map read, and per tensor its GGUF name, the name it is read as, its
// ggml type and what was done to it at load.
Result<nlohmann::json> gguf_summary(const std::string& path, const std::string& maps_dir);

// The same from a file already read and its map.
Result<Checkpoint> gguf_checkpoint(const GgufFile& file, const GgufNameMap& map);

}  // namespace arch

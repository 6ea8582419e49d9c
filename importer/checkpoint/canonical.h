// The canonical model (seeds/000): one safetensors file holding the weights
// in the type chosen at import (as stored, BF16, or block-quantized Q8_0 /
// Q4_0 with their scales), and in its metadata the normalised config and
// the tokenizer's files. No graph inside: the template is chosen and
// instantiated again at load, exactly as for a Hugging Face directory.
//
//   archrun import models/qwen -o qwen-q8.safetensors --dtype q8
//   archrun generate qwen-q8.safetensors --prompt "Hello"
//
// Metadata keys: "format" = "archetype"; "archetype.dtype" (what import was
// asked for); "file:<name>" the text of each side file (config.json,
// tokenizer.json, tokenizer_config.json, generation_config.json,
// special_tokens_map.json, chat_template.jinja); "archetype.quantized": a
// JSON object tensor name -> {"dtype": "Q8_0", "shape": [N, K]} for each
// tensor stored as U8 rows in that block layout (engine/core/quant.h).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "importer/checkpoint/checkpoint.h"

namespace arch {

enum class ImportType { AsStored, F32, BF16, Q8, Q4 };
std::optional<ImportType> import_type_from_name(const std::string& name);  // "bf16", "q8", ...

struct ImportReport {
  int64_t tensors = 0, quantized = 0, converted = 0;
  uint64_t bytes_in = 0, bytes_out = 0;
  std::string path;  // the file written
  // "name: N of M values are NaN or Inf": written as they are, and said
  std::vector<std::string> non_finite;
};

// Reads the checkpoint at `dir`, converts its weights and writes one file
// at `out` (a directory gets model.safetensors inside). `progress` is called
// per tensor with (done, total, name).
using ImportProgress = std::function<void(int64_t done, int64_t total, const std::string& name)>;
Result<ImportReport> import_checkpoint(const std::string& dir, const std::string& out, ImportType type,
                                       const ImportProgress& progress = nullptr);

// Whether `path` (a .safetensors file) is a canonical model.
bool is_canonical_file(const std::string& path);
// Why the file at `path` is not a canonical model: its header's own error
// (a truncated or damaged file), or that archrun import did not write it.
Error not_canonical_reason(const std::string& path);
// The canonical file a path names, if it names one: the file itself, or a
// directory holding model.safetensors of this format and no config.json.
std::optional<std::string> canonical_file_of(const std::string& path);

// A side file's text (tokenizer.json, ...): from the directory, or from a
// canonical model's metadata; nullopt where neither has it.
Result<std::optional<std::string>> read_side_file(const std::string& model, const std::string& name);

// load_checkpoint's reading of a canonical file.
Result<Checkpoint> load_canonical(const std::string& file);

}  // namespace arch

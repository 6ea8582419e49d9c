// The Hugging Face side files a GGUF file's metadata stands for, made from
// it when asked: config.json (gguf_names.h), tokenizer.json and
// tokenizer_config.json (gguf_tokenizer.h), generation_config.json (its
// bos / eos ids). The file is read once per path and kept.
#pragma once

#include <optional>
#include <string>

#include "engine/core/error.h"

namespace arch {

// Whether `path` is a file starting with GGUF's magic.
bool is_gguf_path(const std::string& path);

// `name`'s text, or nullopt for a side file GGUF has no counterpart of.
Result<std::optional<std::string>> gguf_side_file(const std::string& path, const std::string& name,
                                                  const std::string& maps_dir);

}  // namespace arch

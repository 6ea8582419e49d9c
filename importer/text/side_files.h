// Where a model's text files (tokenizer.json, tokenizer_config.json,
// chat_template.jinja) come from. Text does not know checkpoint formats: a
// directory is read as it is, and a canonical model file's metadata is
// read for it by the layer above (engine/runtime/model_text.h).
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "engine/core/error.h"

namespace arch {

// A side file's text by name; nullopt where the model has none.
using ReadSideFile = std::function<Result<std::optional<std::string>>(const std::string& name)>;

// The files of directory `dir`.
ReadSideFile side_files_in(const std::string& dir);

}  // namespace arch

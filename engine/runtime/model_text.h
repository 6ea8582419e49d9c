// A model's tokenizer and chat template, wherever its files are: a
// checkpoint directory, a tokenizer file, or a canonical model file's
// metadata (importer/checkpoint/canonical.h), which importer/text/ does not know.
#pragma once

#include <memory>
#include <string>

#include "importer/text/chat_template/load.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch {

Result<std::shared_ptr<const Tokenizer>> load_model_tokenizer(const std::string& model);
Result<ChatTemplateInfo> load_model_chat_template(const std::string& model);

}  // namespace arch

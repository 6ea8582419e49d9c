#include "engine/runtime/model_text.h"

#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/gguf_side_files.h"

namespace arch {

namespace {

ReadSideFile metadata_of(const std::string& model) {
  return [model](const std::string& name) { return read_side_file(model, name); };
}

}  // namespace

Result<std::shared_ptr<const Tokenizer>> load_model_tokenizer(const std::string& model) {
  if (auto canonical = canonical_file_of(model)) return load_tokenizer_from(metadata_of(model), *canonical);
  if (is_gguf_path(model)) return load_tokenizer_from(metadata_of(model), model);
  return load_tokenizer(model);
}

Result<ChatTemplateInfo> load_model_chat_template(const std::string& model) {
  return load_chat_template(model, metadata_of(model));
}

}  // namespace arch

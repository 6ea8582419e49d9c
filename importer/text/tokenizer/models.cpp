// Picks the model kind: by "type", or for files written before models had
// one, by shape, in the order `tokenizers` tries them (BPE, WordPiece,
// WordLevel, Unigram).
#include "importer/text/tokenizer/components.h"

namespace arch::tok {

Result<std::unique_ptr<Model>> make_model(const json& j, const std::string& where) {
  if (!j.is_object()) return error(where + ": the model is not an object");
  std::string type;
  auto it = j.find("type");
  if (it != j.end() && !it->is_null()) {
    ARCH_TRY(type, get_type(j, "model", where));
  } else {
    auto vocab = j.find("vocab");
    if (vocab != j.end() && vocab->is_array()) type = "Unigram";
    else if (j.contains("merges")) type = "BPE";
    else if (j.contains("continuing_subword_prefix") || j.contains("max_input_chars_per_word")) type = "WordPiece";
    else if (vocab != j.end() && vocab->is_object()) type = "WordLevel";
    else return error(where + ": the model has no 'type' and its fields fit no known model kind");
  }
  std::string at = where + " (" + type + ")";
  if (type == "BPE") return make_bpe(j, at);
  if (type == "WordPiece") return make_wordpiece(j, at);
  if (type == "WordLevel") return make_wordlevel(j, at);
  if (type == "Unigram") return make_unigram(j, at);
  return error(unknown_type("model", type, where, "BPE, WordPiece, WordLevel, Unigram"));
}

}  // namespace arch::tok

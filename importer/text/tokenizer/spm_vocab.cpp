#include "importer/text/tokenizer/spm_vocab.h"

#include <sentencepiece_processor.h>

#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

Status load_spm(sentencepiece::SentencePieceProcessor& sp, const std::string& path) {
  sentencepiece::util::Status status;
  try {
    status = sp.Load(path);
  } catch (const std::exception& e) {
    // Its trie builder throws past Load on a piece it cannot index (one
    // starting with a NUL byte: fuzz_tokenizer_model) with the header's
    // place first: "./third_party/darts_clone/darts.h:1143: exception: ...".
    std::string what = e.what();
    if (auto at = what.find("exception: "); at != std::string::npos) what.erase(0, at + 11);
    return error(path + ": not a SentencePiece model: its pieces cannot be indexed (" + what + ")");
  }
  if (!status.ok()) return error(path + ": not a SentencePiece model: " + status.ToString());
  if (sp.GetPieceSize() <= 0) return error(path + ": the SentencePiece model has no pieces");
  // Checked once loaded: libsentencepiece reads the file whole, in memory
  // proportional to it; the limit keeps what is built on it (ids) bounded.
  return check_entries(size_t(sp.GetPieceSize()), path, "the model's pieces");
}

Status read_vocab_file(const std::string& path, Vocab& vocab) {
  ARCH_TRY(auto file, MappedFile::open(path));
  ARCH_TRY(nlohmann::json object, parse_json(file->text(), path));
  return read_vocab_object(object, path, vocab);
}

std::optional<int32_t> PieceVocabBackend::token_to_id(std::string_view token) const { return vocab.find(token); }

std::optional<std::string> PieceVocabBackend::id_to_token(int32_t id) const {
  const std::string* t = vocab.token(id);
  if (!t) return std::nullopt;
  return *t;
}

bool PieceVocabBackend::is_special(int32_t id) const {
  return id == unk || id == pad || (eos_id && id == *eos_id) || (bos_id && id == *bos_id);
}

std::vector<int32_t> PieceVocabBackend::special_ids() const {
  std::vector<int32_t> s;
  for (int32_t id = 0; id <= vocab.max_id(); ++id)
    if (vocab.token(id) && is_special(id)) s.push_back(id);
  return s;
}

void PieceVocabBackend::append_ids(const sentencepiece::SentencePieceProcessor& sp, std::string_view text,
                                   std::vector<int32_t>& out) const {
  std::string repaired;
  if (!is_valid_utf8(text)) {
    repaired = utf8_lossy(text);
    text = repaired;
  }
  std::vector<std::string> pieces;
  if (!sp.Encode(text, &pieces).ok()) pieces.clear();  // only fails on an unloaded model
  for (const std::string& p : pieces) {
    out.push_back(vocab.find(p).value_or(unk));
  }
}

std::string PieceVocabBackend::decode_through(const sentencepiece::SentencePieceProcessor& sp, std::span<const int32_t> ids,
                                              bool skip_special_tokens) const {
  std::vector<std::string> pieces;
  for (int32_t id : ids) {
    const std::string* t = vocab.token(id);
    if (!t || (skip_special_tokens && is_special(id))) continue;
    pieces.push_back(*t);
  }
  std::string out;
  if (!sp.Decode(pieces, &out).ok()) return "";
  return out;
}

}  // namespace arch::tok

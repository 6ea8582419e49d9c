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
    return error(path + ": not a SentencePiece model (" + e.what() + ")");
  }
  if (!status.ok()) return error(path + ": not a SentencePiece model (" + status.ToString() + ")");
  return {};
}

Result<PieceVocab> read_piece_vocab(const std::string& path) {
  ARCH_TRY(auto file, MappedFile::open(path));
  ARCH_TRY(nlohmann::json vocab, parse_json(file->text(), path));
  if (!vocab.is_object()) return error(path + ": expected an object {piece: id}");
  ARCH_TRY_STATUS(check_entries(vocab.size(), path, "the vocabulary (entries)"));
  PieceVocab v;
  v.entries = vocab.size();
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    ARCH_TRY(int32_t id, token_id(it.value(), path, "vocab entry '" + it.key() + "'"));
    if (size_t(id) >= v.tokens.size()) v.tokens.resize(size_t(id) + 1);
    if (!v.tokens[size_t(id)].empty())
      return error(path + ": id " + std::to_string(id) + " is both '" + v.tokens[size_t(id)] + "' and '" + it.key() + "'");
    v.tokens[size_t(id)] = it.key();
    v.ids.emplace(it.key(), id);
  }
  return v;
}

std::optional<int32_t> PieceVocabBackend::token_to_id(std::string_view token) const {
  auto it = vocab.ids.find(token);
  if (it == vocab.ids.end()) return std::nullopt;
  return it->second;
}

std::optional<std::string> PieceVocabBackend::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= vocab.tokens.size() || vocab.tokens[size_t(id)].empty()) return std::nullopt;
  return vocab.tokens[size_t(id)];
}

bool PieceVocabBackend::is_special(int32_t id) const {
  return id == unk || id == pad || (eos_id && id == *eos_id) || (bos_id && id == *bos_id);
}

std::vector<int32_t> PieceVocabBackend::special_ids() const {
  std::vector<int32_t> s;
  for (int32_t id = 0; id < int32_t(vocab.tokens.size()); ++id)
    if (!vocab.tokens[size_t(id)].empty() && is_special(id)) s.push_back(id);
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
    auto it = vocab.ids.find(p);
    out.push_back(it != vocab.ids.end() ? it->second : unk);
  }
}

std::string PieceVocabBackend::decode_through(const sentencepiece::SentencePieceProcessor& sp, std::span<const int32_t> ids,
                                              bool skip_special_tokens) const {
  std::vector<std::string> pieces;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= vocab.tokens.size() || vocab.tokens[size_t(id)].empty()) continue;
    if (skip_special_tokens && is_special(id)) continue;
    pieces.push_back(vocab.tokens[size_t(id)]);
  }
  std::string out;
  if (!sp.Decode(pieces, &out).ok()) return "";
  return out;
}

}  // namespace arch::tok

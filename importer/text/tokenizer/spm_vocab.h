// What the slow SentencePiece tokenizers with a vocab.json share (Marian's,
// M2M-100's): loading a SentencePiece model, and reading vocab.json's
// {piece: id} into both directions.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "importer/text/tokenizer/backend.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace arch::tok {

// Errors name the file.
Status load_spm(sentencepiece::SentencePieceProcessor& sp, const std::string& path);

struct PieceVocab {
  std::map<std::string, int32_t, std::less<>> ids;
  std::vector<std::string> tokens;  // by id ("" where none)
  size_t entries = 0;               // vocab.json's, as the slow tokenizers count them
  int32_t find(const std::string& t) const {
    auto it = ids.find(t);
    return it != ids.end() ? it->second : -1;
  }
};
// Two pieces with one id, an id out of bounds: errors naming the entry.
Result<PieceVocab> read_piece_vocab(const std::string& path);

// A backend over a PieceVocab: lookups both ways, pieces to ids (<unk>
// where absent), ids back to text through a SentencePiece model.
class PieceVocabBackend : public Backend {
 public:
  PieceVocab vocab;
  int32_t unk = -1, pad = -1;

  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  size_t vocab_size() const override { return vocab.tokens.size(); }
  std::vector<int32_t> special_ids() const override;
  std::string kind() const override { return "SentencePiece"; }

 protected:
  // unk, pad, eos and bos; a subclass adds its own (language tokens).
  virtual bool is_special(int32_t id) const;
  // The pieces of `text` (its bytes that are not UTF-8 read as U+FFFD) by
  // `sp`, each looked up in the vocabulary, appended to `out`.
  void append_ids(const sentencepiece::SentencePieceProcessor& sp, std::string_view text, std::vector<int32_t>& out) const;
  std::string decode_through(const sentencepiece::SentencePieceProcessor& sp, std::span<const int32_t> ids,
                             bool skip_special_tokens) const;
};

}  // namespace arch::tok

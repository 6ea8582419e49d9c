// What the SentencePiece tokenizers share: loading a model (a lone
// tokenizer.model's, and the slow tokenizers' that number its pieces by a
// vocab.json or by fairseq's offset: Marian, M2M-100, XLM-R, mBART), and a
// backend over such a numbering.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "importer/text/tokenizer/backend.h"
#include "importer/text/tokenizer/vocab.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace arch::tok {

// Errors name the file: not a model, pieces libsentencepiece cannot index
// (its trie builder throws past Load), no pieces, more than
// tokenizer_entries.
Status load_spm(sentencepiece::SentencePieceProcessor& sp, const std::string& path);

// vocab.json's {piece: id} (read_vocab_object's checks).
Status read_vocab_file(const std::string& path, Vocab& vocab);

// A backend over a Vocab: lookups both ways, pieces to ids (<unk> where
// absent), ids back to text through a SentencePiece model.
class PieceVocabBackend : public Backend {
 public:
  Vocab vocab;
  int32_t unk = -1, pad = -1;
  int32_t id_of(std::string_view token) const { return vocab.find(token).value_or(-1); }

  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::optional<std::string> id_to_token(int32_t id) const override;
  size_t vocab_size() const override { return size_t(vocab.max_id() + 1); }
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

// Reading a checkpoint's tokenizer and turning text into ids and back, with
// the ids Hugging Face produces: `tokenizers` for tokenizer.json (normalizer,
// pre-tokenizer, BPE / WordPiece / Unigram / WordLevel model, post-processor,
// decoder, added tokens), libsentencepiece for a lone tokenizer.model.
//
//   ARCH_TRY(auto tok, load_tokenizer("models/llama3"));
//   std::vector<int32_t> ids = tok->encode("Hello world");      // BOS added
//   std::string text = tok->decode(ids);                         // "<|begin_of_text|>Hello world"
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/text/side_files.h"

namespace arch {

namespace tok {
class Backend;  // one implementation per file kind (importer/text/tokenizer/backend.h)
}

// A pair of texts as one input (a cross-encoder's query and passage): the
// ids, and each one's type (segment) id.
struct PairEncoding {
  std::vector<int32_t> ids, type_ids;
};

class Tokenizer {
 public:
  explicit Tokenizer(std::unique_ptr<const tok::Backend> backend);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // As `tokenizers`' encode(text, add_special_tokens): added tokens written in
  // the text become their ids; add_special_tokens applies the post-processor
  // (BOS, [CLS] ... [SEP]). Bytes that are not UTF-8 are read as U+FFFD.
  // Safe to call from several threads at once.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // As `tokenizers`' encode((a, b)): the pair laid out by the
  // post-processor's pair form ([CLS] A [SEP] B [SEP], B of type 1, for
  // BERT), the longer text cut first until the whole fits in max_length
  // (and the tokenizer's own truncation). Errors where the tokenizer has no
  // pair form.
  Result<PairEncoding> encode_pair(std::string_view a, std::string_view b, size_t max_length) const;
  // As `tokenizers`' decode(ids, skip_special_tokens): the decoder's text,
  // with no clean_up_tokenization_spaces. Ids without a token are skipped.
  // For a tokenizer.model, SentencePiece's decode (control tokens drop out).
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  std::string id_to_token(int32_t id) const;  // "" for an id with no token
  size_t vocab_size() const;                  // one past the largest id, added tokens included
  std::vector<int32_t> special_ids() const;   // ascending

  // From tokenizer_config.json's bos_token / eos_token (or the SentencePiece
  // model), when the tokenizer has them.
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  // "BPE", "WordPiece", "Unigram", "WordLevel" (tokenizer.json) or "SentencePiece".
  std::string kind() const;
  const std::string& source() const;  // the file it was read from

 private:
  std::unique_ptr<const tok::Backend> backend_;
};

// `dir` is a checkpoint directory: tokenizer.json if present, else
// tokenizer.model, each with tokenizer_config.json when there is one. A path
// to a tokenizer.json or tokenizer.model file works too. Errors name the file.
Result<std::shared_ptr<const Tokenizer>> load_tokenizer(const std::string& dir);

// tokenizer.json (and tokenizer_config.json) as `read` gives them: a canonical
// model's metadata. `label` names the model in messages.
Result<std::shared_ptr<const Tokenizer>> load_tokenizer_from(const ReadSideFile& read, const std::string& label);

// A tokenizer.json held in memory; `source` names it in messages. `config`
// is tokenizer_config.json's content, or null.
Result<std::shared_ptr<const Tokenizer>> tokenizer_from_json(std::string_view text, const std::string& source,
                                                            const nlohmann::json& config = nullptr);

}  // namespace arch

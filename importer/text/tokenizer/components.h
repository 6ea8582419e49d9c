// The stages of a Hugging Face `tokenizers` pipeline, as read from
// tokenizer.json: normalizer -> pre-tokenizer -> model -> post-processor on
// the way in, decoder on the way out. Each stage kind lives in its own file;
// the factories below build one from its JSON and refuse what they do not
// know with a message that names the spot ("tokenizer.json: normalizer:
// unknown normalizer type 'Foo' (supported: ...)").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace arch::tok {

using json = nlohmann::json;

// A piece of the input on its way through the pipeline. Pieces holding an
// added token (`id` >= 0) are final: later stages leave them alone.
struct Split {
  std::string text;
  bool at_origin = false;  // begins at byte 0 of the caller's text
  int32_t id = -1;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& s) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Refines every non-final split; empty pieces are dropped.
  virtual void pre_tokenize(std::vector<Split>& splits) const = 0;
};

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<int32_t>& out) const = 0;
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual const std::string* id_to_token(int32_t id) const = 0;
  virtual size_t size() const = 0;  // entries in the vocabulary
  virtual int32_t max_id() const = 0;
  virtual std::string kind() const = 0;
};

using PairIds = PairEncoding;

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int32_t>& ids, bool add_special_tokens) const = 0;
  virtual size_t added_count() const = 0;  // ids process() adds with add_special_tokens
  // The pair (a, b) with special tokens, as `tokenizers` encodes a pair;
  // this default (no special tokens): a then b, of types 0 and 1.
  virtual PairIds process_pair(const std::vector<int32_t>& a, const std::vector<int32_t>& b) const;
  virtual size_t added_pair_count() const { return 0; }  // ids process_pair() adds
  // false: a template with no pair form, which cannot encode pairs.
  virtual bool lays_out_pairs() const { return true; }
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

Result<std::unique_ptr<Normalizer>> make_normalizer(const json& j, const std::string& where);
Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const json& j, const std::string& where);
Result<std::unique_ptr<Model>> make_model(const json& j, const std::string& where);
Result<std::unique_ptr<PostProcessor>> make_post_processor(const json& j, const std::string& where);
Result<std::unique_ptr<Decoder>> make_decoder(const json& j, const std::string& where);

// Precompiled (normalizer_precompiled.cpp); null for an empty charsmap.
Result<std::unique_ptr<Normalizer>> make_precompiled(const json& j, const std::string& where);

// The model kinds make_model dispatches to (models_*.cpp).
Result<std::unique_ptr<Model>> make_bpe(const json& j, const std::string& where);
Result<std::unique_ptr<Model>> make_wordpiece(const json& j, const std::string& where);
Result<std::unique_ptr<Model>> make_wordlevel(const json& j, const std::string& where);
Result<std::unique_ptr<Model>> make_unigram(const json& j, const std::string& where);

// The pieces of a pipeline that other stages build too.
std::unique_ptr<PostProcessor> make_template(std::vector<int32_t> before, std::vector<int32_t> after);

// Byte-level BPE's reversible byte <-> printable character map (GPT-2).
const std::string& byte_to_char_utf8(uint8_t b);
std::optional<uint8_t> char_to_byte(char32_t c);

// --- reading JSON fields with messages that name the spot --------------------
// A missing key or a null value gives `fallback` when there is one.
Result<std::string> get_string(const json& j, const char* key, const std::string& where,
                               std::optional<std::string> fallback = std::nullopt);
Result<std::optional<std::string>> get_optional_string(const json& j, const char* key, const std::string& where);
Result<bool> get_bool(const json& j, const char* key, const std::string& where,
                      std::optional<bool> fallback = std::nullopt);
Result<int64_t> get_int(const json& j, const char* key, const std::string& where,
                        std::optional<int64_t> fallback = std::nullopt);
Result<std::optional<double>> get_optional_number(const json& j, const char* key, const std::string& where);
// A single character (Metaspace replacement, Strip content).
Result<char32_t> get_char(const json& j, const char* key, const std::string& where,
                          std::optional<char32_t> fallback = std::nullopt);
// Metaspace's prepend_scheme, or the older add_prefix_space (false: never).
enum class PrependScheme { Always, First, Never };
Result<PrependScheme> get_prepend_scheme(const json& j, const std::string& where);
// The "type" of a stage object; `what` is e.g. "normalizer".
Result<std::string> get_type(const json& j, const std::string& what, const std::string& where);
std::string unknown_type(const std::string& what, const std::string& type, const std::string& where,
                         const char* supported);

}  // namespace arch::tok

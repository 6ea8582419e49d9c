// What a Tokenizer delegates to: the tokenizer.json pipeline
// (hf_tokenizer.cpp) or libsentencepiece (sentencepiece_model.cpp).
#pragma once

#include "importer/text/tokenizer/tokenizer.h"

namespace arch::tok {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const = 0;
  virtual std::string decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;
  virtual Result<PairEncoding> encode_pair(std::string_view, std::string_view, size_t) const {
    return error(source + ": this " + kind() + " tokenizer has no post-processor to lay out a pair of texts");
  }
  virtual std::optional<int32_t> token_to_id(std::string_view token) const = 0;
  virtual std::optional<std::string> id_to_token(int32_t id) const = 0;
  virtual size_t vocab_size() const = 0;
  virtual std::vector<int32_t> special_ids() const = 0;
  virtual std::string kind() const = 0;

  std::string source;
  std::optional<int32_t> bos_id, eos_id;
};

// tokenizer.json text; `config` is tokenizer_config.json (or null).
Result<std::unique_ptr<Backend>> hf_backend(std::string_view text, const std::string& source,
                                            const nlohmann::json& config);
// A tokenizer.model file.
Result<std::unique_ptr<Backend>> sentencepiece_backend(const std::string& path, const nlohmann::json& config,
                                                       const std::string& config_source);

// A special token named by tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> config_token(const nlohmann::json& config, const char* key);

}  // namespace arch::tok

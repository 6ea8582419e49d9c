#include "importer/text/tokenizer/tokenizer.h"

#include "importer/text/tokenizer/backend.h"

namespace arch {

Tokenizer::Tokenizer(std::unique_ptr<const tok::Backend> backend) : backend_(std::move(backend)) {}
Tokenizer::~Tokenizer() = default;

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  return backend_->encode(text, add_special_tokens);
}
Result<PairEncoding> Tokenizer::encode_pair(std::string_view a, std::string_view b, size_t max_length) const {
  return backend_->encode_pair(a, b, max_length);
}
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return backend_->decode(ids, skip_special_tokens);
}
std::optional<int32_t> Tokenizer::token_to_id(std::string_view token) const { return backend_->token_to_id(token); }
std::string Tokenizer::id_to_token(int32_t id) const { return backend_->id_to_token(id).value_or(""); }
size_t Tokenizer::vocab_size() const { return backend_->vocab_size(); }
std::vector<int32_t> Tokenizer::special_ids() const { return backend_->special_ids(); }
std::optional<int32_t> Tokenizer::bos_id() const { return backend_->bos_id; }
std::optional<int32_t> Tokenizer::eos_id() const { return backend_->eos_id; }
std::string Tokenizer::kind() const { return backend_->kind(); }
const std::string& Tokenizer::source() const { return backend_->source; }

}  // namespace arch

#include "importer/text/tokenizer/vocab_json.h"

#include "engine/core/limits.h"

namespace arch::tok {

Status check_entries(size_t n, const std::string& where, const std::string& what) {
  return check_limit("tokenizer_entries", int64_t(n), where, what);
}

Result<int32_t> token_id(const json& id, const std::string& where, const std::string& what) {
  // Integers beyond int64 and negatives are malformed; a large id is over the limit.
  if (!id.is_number_integer() || (id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(INT64_MAX)) ||
      id.get<int64_t>() < 0)
    return error(where + ": " + what + " has id " + shown(id.dump()) + ", expected an integer >= 0");
  int64_t v = id.get<int64_t>();
  ARCH_TRY_STATUS(check_limit("tokenizer_entries", v + 1, where,
                              "the vocabulary size implied by the id " + std::to_string(v) + " of " + what));
  if (v > INT32_MAX) return error(where + ": " + what + " has id " + std::to_string(v) + ", past 32-bit ids");
  return int32_t(v);
}

Status read_vocab_map(const json& model, const std::string& where, Vocab& vocab) {
  auto vit = model.find("vocab");
  if (vit == model.end() || !vit->is_object()) return error(where + ": field 'vocab' must be an object {token: id}");
  return read_vocab_object(*vit, where, vocab);
}

Status read_vocab_object(const json& object, const std::string& where, Vocab& vocab) {
  if (!object.is_object()) return error(where + ": the vocabulary must be an object {token: id}");
  ARCH_TRY_STATUS(check_entries(object.size(), where, "the vocabulary (entries)"));
  vocab.reserve(object.size());
  for (auto it = object.begin(); it != object.end(); ++it) {
    ARCH_TRY(int32_t id, token_id(it.value(), where, "vocab entry '" + shown(it.key()) + "'"));
    // Two tokens under one id: decoding the id can give only one of them
    // (which one `tokenizers` keeps depends on its hash map's order).
    if (const std::string* other = vocab.token(id))
      return error(where + ": vocab entries '" + shown(*other) + "' and '" + shown(it.key()) + "' both have id " +
                   std::to_string(id));
    vocab.add(it.key(), id);
  }
  return {};
}

std::string shown(std::string_view s) {
  constexpr size_t kMax = 60;
  if (s.size() <= kMax) return std::string(s);
  size_t cut = kMax;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // whole characters
  return std::string(s.substr(0, cut)) + "... (" + std::to_string(s.size()) + " bytes)";
}

}  // namespace arch::tok

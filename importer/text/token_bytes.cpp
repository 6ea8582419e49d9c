#include "importer/text/token_bytes.h"

#include <algorithm>

#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch {

std::vector<std::string> token_bytes(const Tokenizer& tok) {
  const size_t n = tok.vocab_size();
  std::vector<std::string> out(n);
  const auto special = tok.special_ids();
  // A token decoding to one plain character, decoded before each one.
  const auto a = tok.encode("a", false);
  const int32_t anchor = a.empty() ? -1 : a.back();
  const std::string alone = anchor >= 0 ? tok.decode(std::vector<int32_t>{anchor}) : "";
  static const std::string replacement = "\xEF\xBF\xBD";
  for (size_t id = 0; id < n; ++id) {
    if (std::binary_search(special.begin(), special.end(), int32_t(id))) continue;
    const std::string t = tok.id_to_token(int32_t(id));
    if (t.empty()) continue;
    // <0xHH>: a byte token (SentencePiece's byte fallback).
    if (t.size() == 6 && t.rfind("<0x", 0) == 0 && t.back() == '>' && std::isxdigit(static_cast<unsigned char>(t[3])) &&
        std::isxdigit(static_cast<unsigned char>(t[4]))) {
      out[id] = std::string(1, char(std::stoi(t.substr(3, 2), nullptr, 16)));
      continue;
    }
    if (anchor >= 0) {
      const std::string both = tok.decode(std::vector<int32_t>{anchor, int32_t(id)});
      if (both.size() > alone.size() && both.compare(0, alone.size(), alone) == 0 &&
          both.find(replacement, alone.size()) == std::string::npos && t.find(replacement) == std::string::npos) {
        out[id] = both.substr(alone.size());
        continue;
      }
    }
    // Part of a character: the byte-level alphabet's bytes, where the token is written in it.
    std::string bytes;
    bool all = true;
    for (size_t i = 0; i < t.size() && all;) {
      const auto b = tok::char_to_byte(tok::next_char(t, i));
      if (b) bytes += char(*b);
      else all = false;
    }
    if (all) out[id] = bytes;
  }
  return out;
}

}  // namespace arch

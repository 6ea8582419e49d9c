// GPT-2's reversible map between bytes and printable characters: printable
// Latin-1 bytes stand for themselves, the other 68 take U+0100 onwards.
#include <array>

#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

namespace {

struct ByteTables {
  std::array<std::string, 256> utf8;
  std::array<char32_t, 256> chars{};
  ByteTables() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      chars[b] = printable ? char32_t(b) : next++;
      append_utf8(utf8[b], chars[b]);
    }
  }
};

const ByteTables& tables() {
  static const ByteTables t;
  return t;
}

}  // namespace

const std::string& byte_to_char_utf8(uint8_t b) { return tables().utf8[b]; }

std::optional<uint8_t> char_to_byte(char32_t c) {
  if (c < 256) {
    bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
    if (printable) return uint8_t(c);
    return std::nullopt;
  }
  if (c >= 256 + 68) return std::nullopt;
  const auto& t = tables();
  for (int b = 0; b < 256; ++b)
    if (t.chars[b] == c) return uint8_t(b);
  return std::nullopt;
}

}  // namespace arch::tok

// Precompiled: SentencePiece's normalization rules (T5, ALBERT, XLNet,
// mBART exports) as the `precompiled_charsmap` blob: a little-endian u32 trie
// size, a darts-clone double-array trie over UTF-8 bytes, then NUL-separated
// replacement strings the trie's values point into. Applied the way
// `tokenizers` applies it: per extended grapheme cluster, a cluster shorter
// than 6 bytes is replaced whole when the trie knows a prefix of it, otherwise
// each character is looked up on its own.
#include <cstring>

#include <utf8proc.h>

#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

namespace {

std::optional<std::string> base64_decode(std::string_view s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] != '='; ++i) {
    int v = value(s[i]);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
    }
  }
  for (; i < s.size(); ++i)
    if (s[i] != '=') return std::nullopt;
  return out;
}

class Precompiled : public Normalizer {
 public:
  static Result<std::unique_ptr<Normalizer>> from_blob(const std::string& blob, const std::string& where) {
    auto p = std::make_unique<Precompiled>();
    if (blob.size() < 4) return error(where + ": precompiled_charsmap is too short");
    uint32_t trie_bytes;
    std::memcpy(&trie_bytes, blob.data(), 4);  // little-endian, as is this host
    if (trie_bytes % 4 != 0 || trie_bytes == 0 || trie_bytes > blob.size() - 4)
      return error(where + ": precompiled_charsmap has a trie size of " + std::to_string(trie_bytes) +
                   " bytes, which does not fit its " + std::to_string(blob.size()) + " bytes");
    p->units_.resize(trie_bytes / 4);
    std::memcpy(p->units_.data(), blob.data() + 4, trie_bytes);
    p->strings_ = blob.substr(4 + trie_bytes);
    if (!is_valid_utf8(p->strings_)) return error(where + ": precompiled_charsmap's strings are not UTF-8");
    return std::unique_ptr<Normalizer>(std::move(p));
  }

  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    bool changed = false;
    int32_t state = 0;
    size_t g_begin = 0;
    char32_t prev = 0;
    for (size_t i = 0; i < s.size();) {
      size_t b = i;
      char32_t c = next_char(s, i);
      if (b > 0 && utf8proc_grapheme_break_stateful(utf8proc_int32_t(prev), utf8proc_int32_t(c), &state)) {
        changed |= cluster(std::string_view(s).substr(g_begin, b - g_begin), out);
        g_begin = b;
      }
      prev = c;
    }
    if (!s.empty()) changed |= cluster(std::string_view(s).substr(g_begin), out);
    if (changed) s = std::move(out);
  }

 private:
  // Appends the normalized cluster; true if anything was replaced.
  bool cluster(std::string_view g, std::string& out) const {
    if (g.size() < 6) {
      if (auto r = transform(g)) {
        out.append(*r);
        return true;
      }
    }
    bool changed = false;
    for (size_t i = 0; i < g.size();) {
      size_t b = i;
      next_char(g, i);
      std::string_view c = g.substr(b, i - b);
      if (auto r = transform(c)) {
        out.append(*r);
        changed = true;
      } else {
        out.append(c);
      }
    }
    return changed;
  }

  // The replacement for the shortest key that is a prefix of `chunk`.
  std::optional<std::string_view> transform(std::string_view chunk) const {
    auto has_leaf = [](uint32_t u) { return (u >> 8) & 1; };
    auto value = [](uint32_t u) { return u & 0x7FFFFFFFu; };
    auto label = [](uint32_t u) { return u & (0x80000000u | 0xFFu); };
    auto offset = [](uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); };
    size_t pos = offset(units_[0]);
    for (unsigned char c : chunk) {
      if (c == 0) break;
      pos ^= c;
      if (pos >= units_.size()) return std::nullopt;
      uint32_t unit = units_[pos];
      if (label(unit) != c) return std::nullopt;
      pos ^= offset(unit);
      if (pos >= units_.size()) return std::nullopt;
      if (has_leaf(unit)) {
        size_t at = value(units_[pos]);
        if (at >= strings_.size()) return std::nullopt;
        size_t end = strings_.find('\0', at);
        return std::string_view(strings_).substr(at, (end == std::string::npos ? strings_.size() : end) - at);
      }
    }
    return std::nullopt;
  }

  std::vector<uint32_t> units_;
  std::string strings_;
};

}  // namespace

Result<std::unique_ptr<Normalizer>> make_precompiled(const json& j, const std::string& where) {
  ARCH_TRY(std::string b64, get_string(j, "precompiled_charsmap", where, ""));
  if (b64.empty()) return std::unique_ptr<Normalizer>();  // no rules: the identity
  auto blob = base64_decode(b64);
  if (!blob) return error(where + ": precompiled_charsmap is not base64");
  return Precompiled::from_blob(*blob, where);
}

}  // namespace arch::tok

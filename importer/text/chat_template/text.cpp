#include "importer/text/chat_template/text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace arch::jinja {

Utf8Char decode_utf8(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return {c, 1};
  size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (len == 0 || c > 0xF4 || i + len > s.size()) return {c, 1};
  uint32_t cp = c & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return {c, 1};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  // Overlong forms and surrogates are invalid too.
  static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {c, 1};
  return {cp, len};
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

std::vector<size_t> char_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); i += decode_utf8(s, i).len) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

size_t byte_offset(std::string_view s, size_t chars, size_t from) {
  size_t i = from;
  for (; chars > 0 && i < s.size(); --chars) i += decode_utf8(s, i).len;
  return std::min(i, s.size());
}

size_t char_count(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += decode_utf8(s, i).len) ++n;
  return n;
}

namespace {

// Decodes to code points, keeping the original bytes of invalid ones.
struct Chars {
  std::vector<uint32_t> cps;
  std::vector<std::string_view> raw;
  explicit Chars(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
      Utf8Char c = decode_utf8(s, i);
      cps.push_back(c.cp);
      raw.push_back(s.substr(i, c.len));
      i += c.len;
    }
  }
};

// Simple (one code point) case mappings by range; 0 = no mapping.
uint32_t simple_upper(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return 0;
  if (c == 0xB5) return 0x39C;
  if ((c >= 0xE0 && c <= 0xFE && c != 0xF7)) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x12F) return (c & 1) ? c - 1 : 0;
  if (c == 0x131) return 'I';
  if (c >= 0x132 && c <= 0x137) return (c & 1) ? c - 1 : 0;
  if (c >= 0x139 && c <= 0x148) return (c & 1) ? 0 : c - 1;
  if (c >= 0x14A && c <= 0x177) return (c & 1) ? c - 1 : 0;
  if (c >= 0x179 && c <= 0x17E) return (c & 1) ? 0 : c - 1;
  if (c == 0x17F) return 'S';
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F))
    return (c & 1) ? c - 1 : 0;
  if (c == 0x4CF) return 0x4C0;
  if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? 0 : c - 1;
  if (c >= 0x561 && c <= 0x586) return c - 48;
  if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF)) return (c & 1) ? c - 1 : 0;
  if (c >= 0xFF41 && c <= 0xFF5A) return c - 32;
  return 0;
}

uint32_t simple_lower(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return 0;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x12F) return (c & 1) ? 0 : c + 1;
  if (c >= 0x132 && c <= 0x137) return (c & 1) ? 0 : c + 1;
  if (c >= 0x139 && c <= 0x148) return (c & 1) ? c + 1 : 0;
  if (c >= 0x14A && c <= 0x177) return (c & 1) ? 0 : c + 1;
  if (c == 0x178) return 0xFF;
  if (c >= 0x179 && c <= 0x17E) return (c & 1) ? c + 1 : 0;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F))
    return (c & 1) ? 0 : c + 1;
  if (c == 0x4C0) return 0x4CF;
  if (c >= 0x4C1 && c <= 0x4CE) return (c & 1) ? c + 1 : 0;
  if (c >= 0x531 && c <= 0x556) return c + 48;
  if ((c >= 0x1E00 && c <= 0x1E95) || (c >= 0x1EA0 && c <= 0x1EFF)) return (c & 1) ? 0 : c + 1;
  if (c == 0x1E9E) return 0xDF;
  if (c >= 0xFF21 && c <= 0xFF3A) return c + 32;
  return 0;
}

// Full upper mapping (may be several code points).
void upper_into(std::string& out, uint32_t c, std::string_view raw) {
  switch (c) {
    case 0xDF: out += "SS"; return;
    case 0x149: out += "\u02BCN"; return;
    case 0x390: out += "\u0399\u0308\u0301"; return;
    case 0x3B0: out += "\u03A5\u0308\u0301"; return;
    case 0x587: out += "\u0535\u0552"; return;
    default: break;
  }
  if (uint32_t u = simple_upper(c)) append_utf8(out, u);
  else out += raw;
}

void lower_into(std::string& out, uint32_t c, std::string_view raw) {
  if (c == 0x130) { out += "i\u0307"; return; }
  if (uint32_t l = simple_lower(c)) append_utf8(out, l);
  else out += raw;
}

// Python's lower() of capital sigma depends on its neighbours (Final_Sigma).
bool is_final_sigma(const Chars& ch, size_t i) {
  size_t j = i;
  bool before = false;
  while (j > 0) {
    --j;
    if (py_iscased(ch.cps[j])) { before = true; break; }
    if (ch.cps[j] != '\'' && ch.cps[j] != 0x2019 && ch.cps[j] != 0xAD) break;
  }
  if (!before) return false;
  for (size_t k = i + 1; k < ch.cps.size(); ++k) {
    if (py_iscased(ch.cps[k])) return false;
    if (ch.cps[k] != '\'' && ch.cps[k] != 0x2019 && ch.cps[k] != 0xAD) break;
  }
  return true;
}

std::string lower_chars(const Chars& ch, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to; ++i) {
    if (ch.cps[i] == 0x3A3) out += is_final_sigma(ch, i) ? "\u03C2" : "\u03C3";
    else lower_into(out, ch.cps[i], ch.raw[i]);
  }
  return out;
}

bool in_strip_set(uint32_t cp, const std::optional<std::vector<uint32_t>>& set) {
  if (!set) return py_isspace(cp);
  for (uint32_t c : *set) if (c == cp) return true;
  return false;
}

bool is_line_break(uint32_t c) {
  return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
         c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
}

// Byte offset of the code-point index of a byte position.
int64_t cp_index(std::string_view s, size_t byte_pos) {
  return static_cast<int64_t>(char_count(s.substr(0, byte_pos)));
}

}  // namespace

bool py_isspace(uint32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 ||
         c == 0x202F || c == 0x205F || c == 0x3000;
}

bool py_isdigit(uint32_t c) {
  return (c >= '0' && c <= '9') || (c >= 0xFF10 && c <= 0xFF19) || (c >= 0x660 && c <= 0x669) ||
         (c >= 0x966 && c <= 0x96F);
}

bool py_isalpha(uint32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (c < 0xC0) return c == 0xAA || c == 0xB5 || c == 0xBA;
  if (c == 0xD7 || c == 0xF7) return false;
  if (py_isspace(c) || py_isdigit(c)) return false;
  // Punctuation, symbols, marks, emoji and private use: not letters.
  if ((c >= 0x300 && c <= 0x36F) || (c >= 0x2000 && c <= 0x2BFF) ||
      (c >= 0x3000 && c <= 0x303F) || (c >= 0xD800 && c <= 0xF8FF) ||
      (c >= 0xFE00 && c <= 0xFE0F) || (c >= 0xFE30 && c <= 0xFE6F) ||
      (c >= 0xFF00 && c <= 0xFF20 && !(c >= 0xFF10 && c <= 0xFF19)) ||
      (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65) ||
      (c >= 0xFFF0 && c <= 0xFFFF) || (c >= 0x1F000 && c <= 0x1FAFF) || c >= 0xE0000)
    return false;
  return true;
}

bool py_isalnum(uint32_t c) { return py_isalpha(c) || py_isdigit(c); }
bool py_isupper_cp(uint32_t c) { return simple_lower(c) != 0 || c == 0x130; }
bool py_islower_cp(uint32_t c) {
  return simple_upper(c) != 0 || c == 0xDF || c == 0x149 || c == 0x390 || c == 0x3B0 ||
         c == 0x587;
}
bool py_iscased(uint32_t c) { return py_isupper_cp(c) || py_islower_cp(c); }

bool py_isprintable(uint32_t c) {
  if (c < 0x20 || (c >= 0x7F && c <= 0xA0) || c == 0xAD) return false;
  if (c == 0x1680 || (c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F) ||
      (c >= 0x205F && c <= 0x206F) || c == 0x3000 || c == 0xFEFF ||
      (c >= 0xFFF9 && c <= 0xFFFB) || (c >= 0xD800 && c <= 0xF8FF) || c >= 0xE0000 ||
      c == 0xFFFE || c == 0xFFFF)
    return false;
  return true;
}

std::string py_upper(std::string_view s) {
  Chars ch(s);
  std::string out;
  for (size_t i = 0; i < ch.cps.size(); ++i) upper_into(out, ch.cps[i], ch.raw[i]);
  return out;
}

std::string py_lower(std::string_view s) {
  Chars ch(s);
  return lower_chars(ch, 0, ch.cps.size());
}

std::string py_capitalize(std::string_view s) {
  Chars ch(s);
  if (ch.cps.empty()) return "";
  std::string out;
  upper_into(out, ch.cps[0], ch.raw[0]);
  return out + lower_chars(ch, 1, ch.cps.size());
}

std::string py_title(std::string_view s) {
  Chars ch(s);
  std::string out;
  bool prev_cased = false;
  for (size_t i = 0; i < ch.cps.size(); ++i) {
    uint32_t c = ch.cps[i];
    if (prev_cased) {
      if (c == 0x3A3) out += is_final_sigma(ch, i) ? "\u03C2" : "\u03C3";
      else lower_into(out, c, ch.raw[i]);
    } else {
      upper_into(out, c, ch.raw[i]);
    }
    prev_cased = py_iscased(c);
  }
  return out;
}

std::string py_swapcase(std::string_view s) {
  Chars ch(s);
  std::string out;
  for (size_t i = 0; i < ch.cps.size(); ++i) {
    if (py_isupper_cp(ch.cps[i])) lower_into(out, ch.cps[i], ch.raw[i]);
    else if (py_islower_cp(ch.cps[i])) upper_into(out, ch.cps[i], ch.raw[i]);
    else out += ch.raw[i];
  }
  return out;
}

bool py_islower(std::string_view s) {
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    if (py_isupper_cp(c.cp)) return false;
    if (py_islower_cp(c.cp)) cased = true;
    i += c.len;
  }
  return cased;
}

bool py_isupper(std::string_view s) {
  bool cased = false;
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    if (py_islower_cp(c.cp)) return false;
    if (py_isupper_cp(c.cp)) cased = true;
    i += c.len;
  }
  return cased;
}

std::string py_strip(std::string_view s, int sides, const std::optional<std::string>& chars) {
  std::optional<std::vector<uint32_t>> set;
  if (chars) {
    set.emplace();
    for (size_t i = 0; i < chars->size();) {
      Utf8Char c = decode_utf8(*chars, i);
      set->push_back(c.cp);
      i += c.len;
    }
  }
  // One pass: where the first kept character starts, where the last ends.
  size_t b = s.size(), e = 0;
  bool kept_any = false;
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    bool strip = in_strip_set(c.cp, set);
    if (!strip || !(sides & kStripLeft)) {
      if (!kept_any) b = i;
      kept_any = true;
    }
    if (!strip || !(sides & kStripRight)) e = i + c.len;
    i += c.len;
  }
  if (!kept_any) return std::string();
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  int64_t maxsplit) {
  std::vector<std::string> out;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.emplace_back(s.substr(start));
    return out;
  }
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size()) {
      Utf8Char c = decode_utf8(s, i);
      if (!py_isspace(c.cp)) break;
      i += c.len;
    }
  };
  skip_space();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      out.emplace_back(s.substr(i));  // the rest, as it is
      return out;
    }
    size_t start = i;
    while (i < s.size()) {
      Utf8Char c = decode_utf8(s, i);
      if (py_isspace(c.cp)) break;
      i += c.len;
    }
    out.emplace_back(s.substr(start, i - start));
    skip_space();
  }
  return out;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep,
                                   int64_t maxsplit) {
  if (maxsplit < 0) return py_split(s, sep, maxsplit);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    out.emplace_back(s.substr(0, end));
  } else {
    std::vector<size_t> off = char_offsets(s);
    size_t e = off.size() - 1;
    auto space_at = [&](size_t k) { return py_isspace(decode_utf8(s, off[k]).cp); };
    while (e > 0 && space_at(e - 1)) --e;
    while (e > 0) {
      if (static_cast<int64_t>(out.size()) >= maxsplit) {
        out.emplace_back(s.substr(0, off[e]));
        break;
      }
      size_t b = e;
      while (b > 0 && !space_at(b - 1)) --b;
      out.emplace_back(s.substr(off[b], off[e] - off[b]));
      e = b;
      while (e > 0 && space_at(e - 1)) --e;
    }
  }
  return {out.rbegin(), out.rend()};
}

void py_each_line(std::string_view s, bool keepends, const std::function<void(std::string_view)>& f) {
  size_t start = 0, i = 0;
  while (i < s.size()) {
    Utf8Char c = decode_utf8(s, i);
    if (!is_line_break(c.cp)) {
      i += c.len;
      continue;
    }
    size_t brk = c.len;
    if (c.cp == '\r' && i + 1 < s.size() && s[i + 1] == '\n') brk = 2;
    f(s.substr(start, (keepends ? i + brk : i) - start));
    i += brk;
    start = i;
  }
  if (start < s.size()) f(s.substr(start));
}

std::vector<std::string> py_splitlines(std::string_view s, bool keepends) {
  std::vector<std::string> out;
  py_each_line(s, keepends, [&](std::string_view line) { out.emplace_back(line); });
  return out;
}

size_t py_line_count(std::string_view s) {
  size_t n = 0;
  py_each_line(s, false, [&](std::string_view) { ++n; });
  return n;
}

size_t py_split_count(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  size_t cuts = 0;
  if (sep) {
    for (size_t at = s.find(*sep); at != std::string_view::npos && (maxsplit < 0 || int64_t(cuts) < maxsplit);
         at = s.find(*sep, at + sep->size()))
      ++cuts;
    return cuts + 1;
  }
  size_t words = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    bool space = py_isspace(c.cp);
    if (!space && !in_word) {
      ++words;
      // Past maxsplit the rest is one piece, as it is.
      if (maxsplit >= 0 && int64_t(words) > maxsplit) return words;
    }
    in_word = !space;
    i += c.len;
  }
  return words;
}

uint64_t py_replace_size(std::string_view s, std::string_view old, std::string_view repl, int64_t count) {
  uint64_t n = uint64_t(py_count(s, old));
  if (count >= 0) n = std::min(n, uint64_t(count));
  // s.size() - n * old.size() + n * repl.size(), in 128 bits: repl may be long.
  unsigned __int128 size = (unsigned __int128)(s.size() - n * old.size()) + (unsigned __int128)n * repl.size();
  return size > UINT64_MAX ? UINT64_MAX : uint64_t(size);
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       int64_t count) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {
    // Python inserts the replacement before every character and at the end.
    std::vector<size_t> off = char_offsets(s);
    for (size_t k = 0; k + 1 < off.size(); ++k) {
      if (count < 0 || done < count) { out += repl; ++done; }
      out += s.substr(off[k], off[k + 1] - off[k]);
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t start = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += repl;
    start = at + old.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

int64_t py_count(std::string_view s, std::string_view needle) {
  if (needle.empty()) return static_cast<int64_t>(char_count(s)) + 1;
  int64_t n = 0;
  for (size_t at = s.find(needle); at != std::string_view::npos; at = s.find(needle, at + needle.size()))
    ++n;
  return n;
}

int64_t py_find(std::string_view s, std::string_view needle) {
  size_t at = s.find(needle);
  return at == std::string_view::npos ? -1 : cp_index(s, at);
}

int64_t py_rfind(std::string_view s, std::string_view needle) {
  size_t at = s.rfind(needle);
  return at == std::string_view::npos ? -1 : cp_index(s, at);
}

uint64_t padding(std::string_view s, int64_t width) {
  int64_t n = static_cast<int64_t>(char_count(s));
  return width > n ? uint64_t(width - n) : 0;
}

std::string py_center(std::string_view s, int64_t width, std::string_view fill) {
  int64_t n = static_cast<int64_t>(char_count(s));
  if (width <= n) return std::string(s);
  int64_t marg = width - n;
  // CPython: left = marg / 2 + (marg & width & 1)
  int64_t left = marg / 2 + (marg & width & 1);
  std::string out;
  for (int64_t i = 0; i < left; ++i) out += fill;
  out += s;
  for (int64_t i = 0; i < marg - left; ++i) out += fill;
  return out;
}

std::string py_repr_string(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    uint32_t cp = c.cp;
    bool invalid = c.len == 1 && cp >= 0x80;
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (invalid) {
      out += s.substr(i, 1);  // not a Python str; keep the byte
    } else if (!py_isprintable(cp)) {
      char buf[16];
      if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", cp);
      else std::snprintf(buf, sizeof buf, "\\U%08x", cp);
      out += buf;
    } else {
      out += s.substr(i, c.len);
    }
    i += c.len;
  }
  out += quote;
  return out;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  // Shortest round-trip digits, in scientific form: "-d.ddde+XX".
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (sci[i] != '.') digits += sci[i];
  int exp10 = std::atoi(sci.c_str() + e + 1);
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(decpt - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, decpt) + "." + digits.substr(decpt);
    }
  } else {
    out += digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    out += eb;
  }
  return out;
}

}  // namespace arch::jinja

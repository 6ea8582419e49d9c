#include "importer/text/tokenizer/unicode.h"

#include "engine/core/utf8.h"

#include <cstdlib>
#include <memory>

#include <utf8proc.h>

namespace arch::tok {

char32_t next_char(std::string_view s, size_t& i) {
  auto b = [&](size_t k) { return char32_t(static_cast<unsigned char>(s[i + k])); };
  char32_t c = b(0);
  size_t n = utf8_len(static_cast<unsigned char>(s[i]));
  if (n > s.size() - i) n = 1;  // truncated: callers only pass valid UTF-8
  if (n == 2) c = ((c & 0x1F) << 6) | (b(1) & 0x3F);
  else if (n == 3) c = ((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  else if (n == 4) c = ((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  i += n;
  return c;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c);
  } else if (c < 0x800) {
    out += char(0xC0 | (c >> 6));
    out += char(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += char(0xE0 | (c >> 12));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  } else {
    out += char(0xF0 | (c >> 18));
    out += char(0x80 | ((c >> 12) & 0x3F));
    out += char(0x80 | ((c >> 6) & 0x3F));
    out += char(0x80 | (c & 0x3F));
  }
}

size_t char_count(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

bool is_valid_utf8(std::string_view s) { return arch::is_valid_utf8(s); }

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t good;
  for (size_t i = 0; i < s.size();) {
    size_t n = valid_utf8_sequence(s, i, good);
    if (n) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += good;
    }
  }
  return out;
}

bool is_whitespace(char32_t c) {
  if (c < 0x80) return c == ' ' || (c >= 0x09 && c <= 0x0D);
  switch (c) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

namespace {
inline int cat(char32_t c) { return utf8proc_category(utf8proc_int32_t(c)); }
}  // namespace

bool is_other(char32_t c) {
  int k = cat(c);
  return k == UTF8PROC_CATEGORY_CN || k >= UTF8PROC_CATEGORY_CC;  // CC CF CS CO
}
bool is_control_cc(char32_t c) { return cat(c) == UTF8PROC_CATEGORY_CC; }
bool is_punctuation(char32_t c) {
  int k = cat(c);
  return k >= UTF8PROC_CATEGORY_PC && k <= UTF8PROC_CATEGORY_PO;
}
bool is_numeric(char32_t c) {
  int k = cat(c);
  return k >= UTF8PROC_CATEGORY_ND && k <= UTF8PROC_CATEGORY_NO;
}
bool is_mark_nonspacing(char32_t c) { return cat(c) == UTF8PROC_CATEGORY_MN; }
bool is_mark(char32_t c) {
  int k = cat(c);
  return k >= UTF8PROC_CATEGORY_MN && k <= UTF8PROC_CATEGORY_ME;
}

bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  int k = cat(c);
  if (k >= UTF8PROC_CATEGORY_LU && k <= UTF8PROC_CATEGORY_ND) return true;  // L*, M*, Nd
  if (k == UTF8PROC_CATEGORY_NL || k == UTF8PROC_CATEGORY_PC) return true;
  if (c == 0x200C || c == 0x200D) return true;  // Join_Control
  // Other_Alphabetic outside the marks: circled and squared Latin letters.
  return (c >= 0x24B6 && c <= 0x24E9) || (c >= 0x1F130 && c <= 0x1F149) ||
         (c >= 0x1F150 && c <= 0x1F169) || (c >= 0x1F170 && c <= 0x1F189);
}

bool is_bert_punctuation(char32_t c) {
  if (c < 0x80)
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return is_punctuation(c);
}

void append_lowercase(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += char(c >= 'A' && c <= 'Z' ? c + 32 : c);
  } else if (c == 0x130) {  // the one unconditional multi-char lowercase mapping
    out += "i\xCC\x87";
  } else {
    append_utf8(out, char32_t(utf8proc_tolower(utf8proc_int32_t(c))));
  }
}

std::string lowercase(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) append_lowercase(out, next_char(s, i));
  return out;
}

std::string normalize_form(std::string_view s, NormalForm form) {
  bool ascii = true;
  for (unsigned char c : s) ascii &= c < 0x80;
  if (ascii) return std::string(s);  // every normal form leaves ASCII alone
  int opts = UTF8PROC_STABLE;
  switch (form) {
    case NormalForm::NFC: opts |= UTF8PROC_COMPOSE; break;
    case NormalForm::NFD: opts |= UTF8PROC_DECOMPOSE; break;
    case NormalForm::NFKC: opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NormalForm::NFKD: opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                    utf8proc_ssize_t(s.size()), &out, utf8proc_option_t(opts));
  if (n < 0) return std::string(s);  // invalid input: callers pass valid UTF-8, so unreachable
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(out, &std::free);
  return std::string(reinterpret_cast<const char*>(out), size_t(n));
}

}  // namespace arch::tok

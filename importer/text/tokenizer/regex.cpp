#include "importer/text/tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

struct Pattern::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

namespace {

// Unicode White_Space as class items. PCRE2's own `\s` adds U+180E.
constexpr const char* kSpaceItems =
    "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";
// Oniguruma's Unicode `\w`. PCRE2's takes all of \p{N} and only `_` of \p{Pc}.
constexpr const char* kWordItems = "\\p{L}\\p{M}\\p{Nd}\\p{Pc}";

}  // namespace

std::string onig_to_pcre2(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 32);
  bool in_class = false, class_start = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char n = p[++i];
      std::string items = (n == 's' || n == 'S') ? kSpaceItems : kWordItems;
      if (n == 's' || n == 'w') {
        out += in_class ? items : "[" + items + "]";
      } else if (n == 'S') {
        out += in_class ? "\\S\\x{180E}" : "[^" + items + "]";
      } else if (n == 'W' && !in_class) {
        out += "[^" + items + "]";
      } else {
        out += c;
        out += n;
      }
      class_start = false;
      continue;
    }
    if (in_class) {
      if (c == '[' && i + 1 < p.size() && p[i + 1] == ':') {  // POSIX class [:alpha:] inside a set
        size_t close = p.find(":]", i + 2);
        if (close != std::string_view::npos) {
          out.append(p.substr(i, close + 2 - i));
          i = close + 1;
          class_start = false;
          continue;
        }
      }
      if (c == ']' && !class_start) in_class = false;
      if (!(class_start && c == '^')) class_start = false;
    } else if (c == '[') {
      in_class = class_start = true;
    }
    out += c;
  }
  return out;
}

Result<Pattern> Pattern::regex(const std::string& pattern, const std::string& where) {
  std::string translated = onig_to_pcre2(pattern);
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE, &err, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return error(where + ": regex '" + pattern + "' does not compile: " + reinterpret_cast<char*>(msg));
  }
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
  auto compiled = std::make_shared<Compiled>();
  compiled->code = code;
  Pattern p;
  p.re_ = std::move(compiled);
  return p;
}

Pattern Pattern::literal(std::string text) {
  Pattern p;
  p.literal_ = std::move(text);
  return p;
}

void Pattern::find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const {
  out.clear();
  if (!re_) {
    if (literal_.empty()) return;  // an empty string pattern matches nothing
    for (size_t at = text.find(literal_); at != std::string_view::npos; at = text.find(literal_, at + literal_.size()))
      out.emplace_back(at, at + literal_.size());
    return;
  }
  struct MatchData {
    pcre2_match_data* md;
    ~MatchData() { pcre2_match_data_free(md); }
  } data{pcre2_match_data_create_from_pattern(re_->code, nullptr)};
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;
  size_t last_end = SIZE_MAX;
  while (pos <= text.size()) {
    int rc = pcre2_match(re_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, data.md, nullptr);
    if (rc < 0 && rc != PCRE2_ERROR_NOMATCH)  // the JIT's stack ran out: the interpreter uses the heap
      rc = pcre2_match(re_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, data.md, nullptr);
    if (rc < 0) break;  // no further match (or a resource limit even so: the rest stays unmatched)
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.md);
    size_t b = ov[0], e = ov[1];
    if (b == e) {
      // An empty match right where the previous one ended is skipped, and the
      // search moves on one character (as the Rust and Oniguruma iterators do).
      if (b != last_end) out.emplace_back(b, e);
      if (b >= text.size()) break;
      pos = b + utf8_len(static_cast<unsigned char>(text[b]));
    } else {
      out.emplace_back(b, e);
      pos = e;
    }
    last_end = e;
  }
}

Result<Pattern> pattern_from_json(const nlohmann::json& j, const std::string& where) {
  if (j.is_object() && j.size() == 1) {
    auto it = j.begin();
    if (it.value().is_string()) {
      if (it.key() == "String") return Pattern::literal(it.value().get<std::string>());
      if (it.key() == "Regex") return Pattern::regex(it.value().get<std::string>(), where);
    }
  }
  return error(where + ": pattern " + j.dump() + " is not {\"String\": ...} or {\"Regex\": ...}");
}

std::string Pattern::replace_all(std::string_view text, std::string_view content) const {
  std::vector<std::pair<size_t, size_t>> matches;
  find_all(text, matches);
  if (matches.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (auto [b, e] : matches) {
    out.append(text.substr(prev, b - prev));
    out.append(content);
    prev = e;
  }
  out.append(text.substr(prev));
  return out;
}

}  // namespace arch::tok

// Normalizers: NFC/NFD/NFKC/NFKD, Lowercase, StripAccents, Replace, Prepend,
// Append, Strip, BertNormalizer, ByteLevel, Nmt, Precompiled (its own file),
// Sequence.
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/regex.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

namespace {

class UnicodeForm : public Normalizer {
 public:
  explicit UnicodeForm(NormalForm f) : form_(f) {}
  void normalize(std::string& s) const override { s = normalize_form(s, form_); }

 private:
  NormalForm form_;
};

class Lowercase : public Normalizer {
 public:
  void normalize(std::string& s) const override { s = lowercase(s); }
};

// Drops nonspacing marks; meant to follow NFD / NFKD.
class StripAccents : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      size_t b = i;
      if (!is_mark_nonspacing(next_char(s, i))) out.append(s, b, i - b);
    }
    s = std::move(out);
  }
};

class Replace : public Normalizer {
 public:
  Replace(Pattern p, std::string content) : pattern_(std::move(p)), content_(std::move(content)) {}
  void normalize(std::string& s) const override { s = pattern_.replace_all(s, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class Prepend : public Normalizer {
 public:
  explicit Prepend(std::string p) : prefix_(std::move(p)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Append : public Normalizer {
 public:
  explicit Append(std::string a) : suffix_(std::move(a)) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s += suffix_;
  }

 private:
  std::string suffix_;
};

class Strip : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string& s) const override {
    size_t first = s.size(), last_end = 0;  // first non-space char, end of the last one
    for (size_t i = 0; i < s.size();) {
      size_t b = i;
      if (!is_whitespace(next_char(s, i))) {
        if (first == s.size()) first = b;
        last_end = i;
      }
    }
    size_t begin = left_ ? first : 0, end = right_ ? last_end : s.size();
    if (begin >= end) s.clear();
    else s = s.substr(begin, end - begin);
  }

 private:
  bool left_, right_;
};

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

class BertNormalizer : public Normalizer {
 public:
  BertNormalizer(bool clean, bool chinese, bool strip_accents, bool lower)
      : clean_(clean), chinese_(chinese), strip_accents_(strip_accents), lower_(lower) {}

  void normalize(std::string& s) const override {
    if (clean_ || chinese_) {
      std::string out;
      out.reserve(s.size());
      for (size_t i = 0; i < s.size();) {
        size_t b = i;
        char32_t c = next_char(s, i);
        if (clean_) {
          bool tab_nl_cr = c == '\t' || c == '\n' || c == '\r';
          if (c == 0 || c == 0xFFFD || (!tab_nl_cr && is_other(c))) continue;
          if (tab_nl_cr || is_whitespace(c)) {
            out += ' ';
            continue;
          }
        }
        if (chinese_ && is_chinese_char(c)) {
          out += ' ';
          out.append(s, b, i - b);
          out += ' ';
        } else {
          out.append(s, b, i - b);
        }
      }
      s = std::move(out);
    }
    if (strip_accents_) {
      s = normalize_form(s, NormalForm::NFD);
      StripAccents().normalize(s);
    }
    if (lower_) s = lowercase(s);
  }

 private:
  bool clean_, chinese_, strip_accents_, lower_;
};

// Every byte becomes its byte-level character.
class ByteLevelNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size() * 2);
    for (unsigned char b : s) out += byte_to_char_utf8(b);
    s = std::move(out);
  }
};

class Nmt : public Normalizer {
 public:
  void normalize(std::string& s) const override {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      size_t b = i;
      char32_t c = next_char(s, i);
      if ((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F || c == 0x9F)
        continue;
      bool space = c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
                   c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD;
      if (space) out += ' ';
      else out.append(s, b, i - b);
    }
    s = std::move(out);
  }
};

class Sequence : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  void normalize(std::string& s) const override {
    for (const auto& p : parts_) p->normalize(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

constexpr const char* kSupported =
    "NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Replace, Prepend, Append, Strip, BertNormalizer, "
    "ByteLevel, Nmt, Precompiled, Sequence";

}  // namespace

Result<std::unique_ptr<Normalizer>> make_normalizer(const json& j, const std::string& where) {
  ARCH_TRY(std::string type, get_type(j, "normalizer", where));
  std::string at = where + " (" + type + ")";
  if (type == "NFC") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::NFC));
  if (type == "NFD") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::NFD));
  if (type == "NFKC") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::NFKC));
  if (type == "NFKD") return std::unique_ptr<Normalizer>(new UnicodeForm(NormalForm::NFKD));
  if (type == "Lowercase") return std::unique_ptr<Normalizer>(new Lowercase);
  if (type == "StripAccents") return std::unique_ptr<Normalizer>(new StripAccents);
  if (type == "ByteLevel") return std::unique_ptr<Normalizer>(new ByteLevelNormalizer);
  if (type == "Nmt") return std::unique_ptr<Normalizer>(new Nmt);
  if (type == "Replace") {
    if (!j.contains("pattern")) return error(at + ": missing field 'pattern'");
    ARCH_TRY(Pattern p, pattern_from_json(j["pattern"], at));
    ARCH_TRY(std::string content, get_string(j, "content", at));
    return std::unique_ptr<Normalizer>(new Replace(std::move(p), std::move(content)));
  }
  if (type == "Prepend") {
    ARCH_TRY(std::string p, get_string(j, "prepend", at));
    return std::unique_ptr<Normalizer>(new Prepend(std::move(p)));
  }
  if (type == "Append") {
    ARCH_TRY(std::string a, get_string(j, "append", at));
    return std::unique_ptr<Normalizer>(new Append(std::move(a)));
  }
  if (type == "Strip") {
    ARCH_TRY(bool left, get_bool(j, "strip_left", at, true));
    ARCH_TRY(bool right, get_bool(j, "strip_right", at, true));
    return std::unique_ptr<Normalizer>(new Strip(left, right));
  }
  if (type == "BertNormalizer") {
    ARCH_TRY(bool clean, get_bool(j, "clean_text", at, true));
    ARCH_TRY(bool chinese, get_bool(j, "handle_chinese_chars", at, true));
    ARCH_TRY(bool lower, get_bool(j, "lowercase", at, true));
    ARCH_TRY(bool strip, get_bool(j, "strip_accents", at, lower));  // null: follow lowercase
    return std::unique_ptr<Normalizer>(new BertNormalizer(clean, chinese, strip, lower));
  }
  if (type == "Precompiled") {
    ARCH_TRY(auto p, make_precompiled(j, at));
    if (!p) p.reset(new Sequence({}));
    return p;
  }
  if (type == "Sequence") {
    auto it = j.find("normalizers");
    if (it == j.end() || !it->is_array()) return error(at + ": field 'normalizers' must be an array");
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      ARCH_TRY(auto part, make_normalizer((*it)[i], where + ".normalizers[" + std::to_string(i) + "]"));
      parts.push_back(std::move(part));
    }
    return std::unique_ptr<Normalizer>(new Sequence(std::move(parts)));
  }
  return error(unknown_type("normalizer", type, where, kSupported));
}

}  // namespace arch::tok

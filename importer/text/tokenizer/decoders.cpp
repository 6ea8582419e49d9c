// Decoders turn tokens back into text, each stage mapping the token list:
// ByteLevel, Metaspace, WordPiece, BPEDecoder, ByteFallback, Fuse, Strip,
// Replace, CTC, Sequence.
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/regex.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

namespace {

using Tokens = std::vector<std::string>;

// Tokens whose characters are all byte-level characters become those bytes,
// others stay as they are; the whole is read as UTF-8, lossily.
class ByteLevel : public Decoder {
 public:
  void decode_chain(Tokens& tokens) const override {
    std::string bytes, own;
    for (const std::string& t : tokens) {
      own.clear();
      bool all = true;
      for (size_t i = 0; i < t.size() && all;) {
        auto b = char_to_byte(next_char(t, i));
        if (b) own += char(*b);
        else all = false;
      }
      bytes += all ? own : t;
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

class Metaspace : public Decoder {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme) : rep_(replacement), scheme_(scheme) {}
  void decode_chain(Tokens& tokens) const override {
    for (size_t k = 0; k < tokens.size(); ++k) {
      std::string out;
      const std::string& t = tokens[k];
      for (size_t i = 0; i < t.size();) {
        size_t b = i;
        char32_t c = next_char(t, i);
        if (c != rep_) out.append(t, b, i - b);
        else if (!(k == 0 && scheme_ != PrependScheme::Never)) out += ' ';
      }
      tokens[k] = std::move(out);
    }
  }

 private:
  char32_t rep_;
  PrependScheme scheme_;
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  return Pattern::literal(std::string(from)).replace_all(s, to);
}

class WordPiece : public Decoder {
 public:
  WordPiece(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(Tokens& tokens) const override {
    for (size_t k = 0; k < tokens.size(); ++k) {
      std::string& t = tokens[k];
      if (k != 0) {
        if (t.starts_with(prefix_)) t.erase(0, prefix_.size());
        else t.insert(0, " ");
      }
      if (cleanup_) t = cleanup(std::move(t));
    }
  }

  static std::string cleanup(std::string s) {
    if (s.find(' ') == std::string::npos) return s;  // every rule starts with a space
    static const std::pair<const char*, const char*> kRules[] = {
        {" .", "."},      {" ?", "?"},   {" !", "!"},   {" ,", ","},       {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"},    {" do not", " don't"},        {" 's", "'s"},     {" 've", "'ve"}, {" 're", "'re"}};
    for (auto [from, to] : kRules) s = replace_all(std::move(s), from, to);
    return s;
  }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeSuffix : public Decoder {
 public:
  explicit BpeSuffix(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(Tokens& tokens) const override {
    for (size_t k = 0; k < tokens.size(); ++k)
      tokens[k] = replace_all(std::move(tokens[k]), suffix_, k + 1 == tokens.size() ? "" : " ");
  }

 private:
  std::string suffix_;
};

// Runs of <0xNN> tokens become the text of their bytes, or one U+FFFD per
// byte if those bytes are not valid UTF-8.
class ByteFallback : public Decoder {
 public:
  void decode_chain(Tokens& tokens) const override {
    Tokens out;
    std::string bytes;
    size_t count = 0;
    auto flush = [&] {
      if (!count) return;
      if (is_valid_utf8(bytes)) out.push_back(bytes);
      else
        for (size_t i = 0; i < count; ++i) out.push_back("\xEF\xBF\xBD");
      bytes.clear();
      count = 0;
    };
    for (std::string& t : tokens) {
      int byte = parse_byte(t);
      if (byte >= 0) {
        bytes += char(byte);
        ++count;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  static int parse_byte(const std::string& t) {
    if (t.size() != 6 || !t.starts_with("<0x") || t[5] != '>') return -1;
    int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse : public Decoder {
 public:
  void decode_chain(Tokens& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
  }
};

class Strip : public Decoder {
 public:
  Strip(char32_t content, size_t start, size_t stop) : content_(content), start_(start), stop_(stop) {}
  void decode_chain(Tokens& tokens) const override {
    for (std::string& t : tokens) {
      std::vector<size_t> starts;  // byte offset of every char
      for (size_t i = 0; i < t.size();) {
        starts.push_back(i);
        next_char(t, i);
      }
      size_t n = starts.size();
      auto char_at = [&](size_t k) {
        size_t i = starts[k];
        return next_char(t, i);
      };
      size_t cut_start = 0;
      for (size_t k = 0; k < std::min(start_, n) && char_at(k) == content_; ++k) cut_start = k + 1;
      size_t cut_stop = n;
      for (size_t k = 0; k < std::min(stop_, n) && char_at(n - 1 - k) == content_; ++k) cut_stop = n - 1 - k;
      if (cut_start >= cut_stop) {
        t.clear();
        continue;
      }
      size_t b = starts[cut_start], e = cut_stop < n ? starts[cut_stop] : t.size();
      t = t.substr(b, e - b);
    }
  }

 private:
  char32_t content_;
  size_t start_, stop_;
};

class Replace : public Decoder {
 public:
  Replace(Pattern p, std::string content) : pattern_(std::move(p)), content_(std::move(content)) {}
  void decode_chain(Tokens& tokens) const override {
    for (std::string& t : tokens) t = pattern_.replace_all(t, content_);
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class Ctc : public Decoder {
 public:
  Ctc(std::string pad, std::string delimiter, bool cleanup)
      : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
  void decode_chain(Tokens& tokens) const override {
    Tokens out;
    for (size_t k = 0; k < tokens.size(); ++k) {
      if (k > 0 && tokens[k] == tokens[k - 1]) continue;  // repeats collapse
      std::string t = replace_all(tokens[k], pad_, "");
      if (cleanup_) t = replace_all(WordPiece::cleanup(std::move(t)), delimiter_, " ");
      if (!t.empty()) out.push_back(std::move(t));
    }
    tokens = std::move(out);
  }

 private:
  std::string pad_, delimiter_;
  bool cleanup_;
};

class Sequence : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(Tokens& tokens) const override {
    for (const auto& p : parts_) p->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

constexpr const char* kSupported =
    "ByteLevel, Metaspace, WordPiece, BPEDecoder, ByteFallback, Fuse, Strip, Replace, CTC, Sequence";

}  // namespace

Result<std::unique_ptr<Decoder>> make_decoder(const json& j, const std::string& where) {
  ARCH_TRY(std::string type, get_type(j, "decoder", where));
  std::string at = where + " (" + type + ")";
  using Ptr = std::unique_ptr<Decoder>;
  if (type == "ByteLevel") return Ptr(new ByteLevel);
  if (type == "Metaspace") {
    ARCH_TRY(char32_t rep, get_char(j, "replacement", at, U'\u2581'));
    ARCH_TRY(PrependScheme scheme, get_prepend_scheme(j, at));
    return Ptr(new Metaspace(rep, scheme));
  }
  if (type == "WordPiece") {
    ARCH_TRY(std::string prefix, get_string(j, "prefix", at, "##"));
    ARCH_TRY(bool cleanup, get_bool(j, "cleanup", at, true));
    return Ptr(new WordPiece(std::move(prefix), cleanup));
  }
  if (type == "BPEDecoder") {
    ARCH_TRY(std::string suffix, get_string(j, "suffix", at, "</w>"));
    return Ptr(new BpeSuffix(std::move(suffix)));
  }
  if (type == "ByteFallback") return Ptr(new ByteFallback);
  if (type == "Fuse") return Ptr(new Fuse);
  if (type == "Strip") {
    ARCH_TRY(char32_t content, get_char(j, "content", at, U' '));
    ARCH_TRY(int64_t start, get_int(j, "start", at, 0));
    ARCH_TRY(int64_t stop, get_int(j, "stop", at, 0));
    if (start < 0 || stop < 0) return error(at + ": start and stop must not be negative");
    return Ptr(new Strip(content, size_t(start), size_t(stop)));
  }
  if (type == "Replace") {
    if (!j.contains("pattern")) return error(at + ": missing field 'pattern'");
    ARCH_TRY(Pattern p, pattern_from_json(j["pattern"], at));
    ARCH_TRY(std::string content, get_string(j, "content", at));
    return Ptr(new Replace(std::move(p), std::move(content)));
  }
  if (type == "CTC") {
    ARCH_TRY(std::string pad, get_string(j, "pad_token", at, "<pad>"));
    ARCH_TRY(std::string delim, get_string(j, "word_delimiter_token", at, "|"));
    ARCH_TRY(bool cleanup, get_bool(j, "cleanup", at, true));
    return Ptr(new Ctc(std::move(pad), std::move(delim), cleanup));
  }
  if (type == "Sequence") {
    auto it = j.find("decoders");
    if (it == j.end() || !it->is_array()) return error(at + ": field 'decoders' must be an array");
    std::vector<Ptr> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      ARCH_TRY(auto part, make_decoder((*it)[i], where + ".decoders[" + std::to_string(i) + "]"));
      parts.push_back(std::move(part));
    }
    return Ptr(new Sequence(std::move(parts)));
  }
  return error(unknown_type("decoder", type, where, kSupported));
}

}  // namespace arch::tok

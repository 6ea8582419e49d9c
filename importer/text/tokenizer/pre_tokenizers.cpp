// Pre-tokenizers: ByteLevel, Split, Metaspace, BertPreTokenizer, Whitespace,
// WhitespaceSplit, Digits, Punctuation, CharDelimiterSplit, Sequence.
#include <algorithm>

#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/regex.h"
#include "importer/text/tokenizer/unicode.h"

namespace arch::tok {

namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Result<Behavior> parse_behavior(const json& j, const std::string& where, Behavior fallback) {
  auto it = j.find("behavior");
  if (it == j.end() || it->is_null()) return fallback;
  std::string b = it->is_string() ? it->get<std::string>() : it->dump();
  if (b == "Removed") return Behavior::Removed;
  if (b == "Isolated") return Behavior::Isolated;
  if (b == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext") return Behavior::MergedWithNext;
  if (b == "Contiguous") return Behavior::Contiguous;
  return error(where + ": unknown split behavior '" + b +
               "' (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

// Applies `f(split, out)` to every split that is not an added token.
template <class F>
void refine(std::vector<Split>& splits, F&& f) {
  std::vector<Split> out;
  out.reserve(splits.size() * 2);
  for (Split& s : splits) {
    if (s.id >= 0) out.push_back(std::move(s));
    else f(s, out);
  }
  splits = std::move(out);
}

void emit(std::vector<Split>& out, const Split& parent, size_t b, size_t e) {
  if (b < e) out.push_back(Split{parent.text.substr(b, e - b), parent.at_origin && b == 0, -1});
}

// Cuts `s` at the `matches` of a pattern, as NormalizedString::split does.
void split_by(const Split& s, const Ranges& matches, Behavior behavior, bool invert, std::vector<Split>& out) {
  struct Piece {
    size_t b, e;
    bool match;
  };
  std::vector<Piece> pieces;
  size_t n = s.text.size();
  if (n == 0) return;
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (prev != b) pieces.push_back({prev, b, false});
    pieces.push_back({b, e, true});
    prev = e;
  }
  if (prev != n) pieces.push_back({prev, n, false});
  if (invert)
    for (Piece& p : pieces) p.match = !p.match;

  std::vector<Piece> kept;  // `match` now means "drop"
  bool prev_match = false;
  switch (behavior) {
    case Behavior::Removed:
      kept = pieces;
      break;
    case Behavior::Isolated:
      for (Piece p : pieces) kept.push_back({p.b, p.e, false});
      break;
    case Behavior::MergedWithPrevious:
      for (Piece p : pieces) {
        if (p.match && !prev_match && !kept.empty()) kept.back().e = p.e;
        else kept.push_back({p.b, p.e, false});
        prev_match = p.match;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
        if (it->match && !prev_match && !kept.empty()) kept.back().b = it->b;
        else kept.push_back({it->b, it->e, false});
        prev_match = it->match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
    case Behavior::Contiguous:
      for (size_t i = 0; i < pieces.size(); ++i) {
        if (i > 0 && pieces[i].match == prev_match) kept.back().e = pieces[i].e;
        else kept.push_back({pieces[i].b, pieces[i].e, false});
        prev_match = pieces[i].match;
      }
      break;
  }
  for (const Piece& p : kept)
    if (!p.match) emit(out, s, p.b, p.e);
}

template <class Pred>
Ranges char_matches(std::string_view text, Pred pred) {
  Ranges r;
  for (size_t i = 0; i < text.size();) {
    size_t b = i;
    if (pred(next_char(text, i))) r.emplace_back(b, i);
  }
  return r;
}

const Pattern& gpt2_pattern() {
  static const Pattern p =
      Pattern::regex(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", "ByteLevel")
          .value();
  return p;
}

class ByteLevel : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void pre_tokenize(std::vector<Split>& splits) const override {
    Ranges m;
    refine(splits, [&](Split& s, std::vector<Split>& out) {
      if (add_prefix_space_ && (s.text.empty() || s.text[0] != ' ')) s.text.insert(0, " ");
      if (!use_regex_) {
        emit(out, s, 0, s.text.size());
        return;
      }
      gpt2_pattern().find_all(s.text, m);
      split_by(s, m, Behavior::Isolated, false, out);
    });
    for (Split& s : splits) {
      if (s.id >= 0) continue;
      std::string mapped;
      mapped.reserve(s.text.size() * 2);
      for (unsigned char b : s.text) mapped += byte_to_char_utf8(b);
      s.text = std::move(mapped);
    }
  }

 private:
  bool add_prefix_space_, use_regex_;
};

class SplitPattern : public PreTokenizer {
 public:
  SplitPattern(Pattern p, Behavior b, bool invert) : pattern_(std::move(p)), behavior_(b), invert_(invert) {}
  void pre_tokenize(std::vector<Split>& splits) const override {
    Ranges m;
    refine(splits, [&](Split& s, std::vector<Split>& out) {
      pattern_.find_all(s.text, m);
      split_by(s, m, behavior_, invert_, out);
    });
  }

 private:
  Pattern pattern_;
  Behavior behavior_;
  bool invert_;
};

class Metaspace : public PreTokenizer {
 public:
  Metaspace(char32_t replacement, PrependScheme scheme, bool split) : scheme_(scheme), split_(split) {
    append_utf8(rep_, replacement);
  }
  void pre_tokenize(std::vector<Split>& splits) const override {
    refine(splits, [&](Split& s, std::vector<Split>& out) {
      s.text = Pattern::literal(" ").replace_all(s.text, rep_);
      bool starts = s.text.compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && s.at_origin)))
        s.text.insert(0, rep_);
      if (!split_) {
        emit(out, s, 0, s.text.size());
        return;
      }
      Ranges m;
      Pattern::literal(rep_).find_all(s.text, m);
      split_by(s, m, Behavior::MergedWithNext, false, out);
    });
  }

 private:
  std::string rep_;
  PrependScheme scheme_;
  bool split_;
};

// Whitespace removed, then every punctuation character on its own.
class BertPreTokenizer : public PreTokenizer {
 public:
  void pre_tokenize(std::vector<Split>& splits) const override {
    refine(splits, [&](Split& s, std::vector<Split>& out) {
      size_t start = 0;
      for (size_t i = 0; i < s.text.size();) {
        size_t b = i;
        char32_t c = next_char(s.text, i);
        if (is_whitespace(c)) {
          emit(out, s, start, b);
          start = i;
        } else if (is_bert_punctuation(c)) {
          emit(out, s, start, b);
          emit(out, s, b, i);
          start = i;
        }
      }
      emit(out, s, start, s.text.size());
    });
  }
};

template <class Pred>
class CharSplit : public PreTokenizer {
 public:
  CharSplit(Pred pred, Behavior b) : pred_(pred), behavior_(b) {}
  void pre_tokenize(std::vector<Split>& splits) const override {
    refine(splits, [&](Split& s, std::vector<Split>& out) {
      split_by(s, char_matches(s.text, pred_), behavior_, false, out);
    });
  }

 private:
  Pred pred_;
  Behavior behavior_;
};

template <class Pred>
std::unique_ptr<PreTokenizer> char_split(Pred pred, Behavior b) {
  return std::make_unique<CharSplit<Pred>>(pred, b);
}

class Sequence : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(std::vector<Split>& splits) const override {
    for (const auto& p : parts_) p->pre_tokenize(splits);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

constexpr const char* kSupported =
    "ByteLevel, Split, Metaspace, BertPreTokenizer, Whitespace, WhitespaceSplit, Digits, Punctuation, "
    "CharDelimiterSplit, Sequence";

}  // namespace

Result<std::unique_ptr<PreTokenizer>> make_pre_tokenizer(const json& j, const std::string& where) {
  ARCH_TRY(std::string type, get_type(j, "pre-tokenizer", where));
  std::string at = where + " (" + type + ")";
  using Ptr = std::unique_ptr<PreTokenizer>;
  if (type == "ByteLevel") {
    ARCH_TRY(bool prefix, get_bool(j, "add_prefix_space", at, true));
    ARCH_TRY(bool use_regex, get_bool(j, "use_regex", at, true));
    return Ptr(new ByteLevel(prefix, use_regex));
  }
  if (type == "Split") {
    if (!j.contains("pattern")) return error(at + ": missing field 'pattern'");
    ARCH_TRY(Pattern p, pattern_from_json(j["pattern"], at));
    ARCH_TRY(Behavior b, parse_behavior(j, at, Behavior::Removed));
    if (!j.contains("behavior")) return error(at + ": missing field 'behavior'");
    ARCH_TRY(bool invert, get_bool(j, "invert", at, false));
    return Ptr(new SplitPattern(std::move(p), b, invert));
  }
  if (type == "Metaspace") {
    ARCH_TRY(char32_t rep, get_char(j, "replacement", at, U'\u2581'));
    ARCH_TRY(PrependScheme scheme, get_prepend_scheme(j, at));
    ARCH_TRY(bool split, get_bool(j, "split", at, true));
    return Ptr(new Metaspace(rep, scheme, split));
  }
  if (type == "BertPreTokenizer") return Ptr(new BertPreTokenizer);
  if (type == "Whitespace") {
    ARCH_TRY(Pattern p, Pattern::regex(R"(\w+|[^\w\s]+)", at));
    return Ptr(new SplitPattern(std::move(p), Behavior::Removed, true));
  }
  if (type == "WhitespaceSplit") return char_split([](char32_t c) { return is_whitespace(c); }, Behavior::Removed);
  if (type == "Digits") {
    ARCH_TRY(bool individual, get_bool(j, "individual_digits", at, false));
    return char_split([](char32_t c) { return is_numeric(c); },
                      individual ? Behavior::Isolated : Behavior::Contiguous);
  }
  if (type == "Punctuation") {
    ARCH_TRY(Behavior b, parse_behavior(j, at, Behavior::Isolated));
    return char_split([](char32_t c) { return is_bert_punctuation(c); }, b);
  }
  if (type == "CharDelimiterSplit") {
    ARCH_TRY(char32_t d, get_char(j, "delimiter", at));
    return char_split([d](char32_t c) { return c == d; }, Behavior::Removed);
  }
  if (type == "Sequence") {
    auto it = j.find("pretokenizers");
    if (it == j.end() || !it->is_array()) return error(at + ": field 'pretokenizers' must be an array");
    std::vector<Ptr> parts;
    for (size_t i = 0; i < it->size(); ++i) {
      ARCH_TRY(auto part, make_pre_tokenizer((*it)[i], where + ".pretokenizers[" + std::to_string(i) + "]"));
      parts.push_back(std::move(part));
    }
    return Ptr(new Sequence(std::move(parts)));
  }
  return error(unknown_type("pre-tokenizer", type, where, kSupported));
}

}  // namespace arch::tok

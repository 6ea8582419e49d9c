// Patterns for Split, Replace and ByteLevel: a literal string or a regex.
// Regexes run on PCRE2 (UTF + UCP, JIT where available) and are read the way
// Hugging Face `tokenizers` reads them with Oniguruma: `\s` is Unicode
// White_Space, `\w` is letters, marks, decimal digits and connector
// punctuation, and `^`/`$` match at line breaks.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch::tok {

class Pattern {
 public:
  // `where` names the pattern in the error, e.g. "tokenizer.json: pre_tokenizer".
  static Result<Pattern> regex(const std::string& pattern, const std::string& where);
  static Pattern literal(std::string text);

  // Non-overlapping leftmost matches as byte ranges [begin, end). `text`
  // must be valid UTF-8.
  void find_all(std::string_view text, std::vector<std::pair<size_t, size_t>>& out) const;
  // Every match replaced by `content`.
  std::string replace_all(std::string_view text, std::string_view content) const;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> re_;  // null for a literal
  std::string literal_;
};

// {"String": "..."} or {"Regex": "..."}, as Split, Replace and their decoders store it.
Result<Pattern> pattern_from_json(const nlohmann::json& j, const std::string& where);

// The Oniguruma reading of `pattern` as PCRE2 syntax (exposed for tests).
std::string onig_to_pcre2(std::string_view pattern);

}  // namespace arch::tok

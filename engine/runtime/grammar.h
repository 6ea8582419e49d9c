// A context-free grammar over Unicode code points, as llama.cpp's GBNF
// text writes one: `name ::= alternatives`, each a sequence of string
// literals ("..."), character classes ([a-z], [^"\\]), rule names and
// parenthesised groups, each optionally repeated (*, +, ?, {m}, {m,},
// {m,n}); `#` comments. Groups and repetitions become rules of their own,
// so a rule is alternatives of sequences of two kinds of element: a set of
// code points, or another rule. The start rule is `root`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace arch {

struct GrammarElement {
  bool is_rule = false;
  int rule = -1;                                     // is_rule: the rule it stands for
  bool negated = false;                              // else: a code point in (or, negated, not in) the ranges
  std::vector<std::pair<char32_t, char32_t>> ranges;  // [first, last] inclusive

  bool matches(char32_t c) const {
    bool in = false;
    for (const auto& [a, b] : ranges) in = in || (c >= a && c <= b);
    return in != negated;
  }
};

struct Grammar {
  struct Rule {
    std::string name;
    std::vector<std::vector<GrammarElement>> alternatives;  // an empty one matches nothing (ε)
  };
  std::vector<Rule> rules;
  int root = -1;
};

// `text` as a GBNF string literal (quotes, backslashes and line breaks escaped).
std::string gbnf_literal(const std::string& text);

// GBNF text into a grammar. Errors name `where`, the line and what is
// wrong: an undefined rule, no `root`, an unclosed literal or class, a
// repetition count past `max_repeat`, a grammar written out past
// `max_elements` (repetitions multiply their items), a left-recursive rule (which a
// left-to-right matcher would expand forever).
Result<Grammar> parse_gbnf(const std::string& text, const std::string& where, int max_repeat = 1000,
                           size_t max_elements = size_t(1) << 22);

}  // namespace arch

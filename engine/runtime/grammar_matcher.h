// Following a grammar along generated text, and which tokens it allows
// next. The matcher's state is the set of places the grammar can be in
// (stacks of rule positions, each stack's top a code-point set to match
// next; an empty stack: the text so far is a whole sentence) and a UTF-8
// sequence part-read. Which tokens are allowed is found by walking a trie
// of the vocabulary's byte strings with the state, so a step visits only
// the prefixes the grammar can still take, not every token.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime/grammar.h"

namespace arch {

class GrammarMatcher {
 public:
  struct State {
    // Each stack: pointers to the next element of each alternative under
    // way, innermost last; an alternative ends at a sentinel element.
    std::vector<std::vector<const GrammarElement*>> stacks;
    char32_t partial = 0;  // a code point part-read
    int need = 0;          // its bytes still to come
    char32_t floor = 0;    // the least code point its length encodes
    bool dead() const { return stacks.empty(); }
  };

  explicit GrammarMatcher(std::shared_ptr<const Grammar> g);

  const State& state() const { return state_; }
  // The state after `bytes` from `from` (dead where the grammar cannot take them).
  State advanced(const State& from, std::string_view bytes) const;
  // Takes the bytes of a chosen token; false where the grammar cannot.
  bool accept(std::string_view bytes);
  // Whether the text so far is a whole sentence of the grammar.
  static bool complete(const State& s);
  bool complete() const { return complete(state_); }

 private:
  State step_byte(const State& from, unsigned char b) const;
  void expand(std::vector<const GrammarElement*> stack, std::vector<std::vector<const GrammarElement*>>& out) const;

  std::shared_ptr<const Grammar> g_;
  // Each rule's alternatives with a sentinel after their last element, so
  // a stack holds plain pointers.
  std::vector<std::vector<std::vector<GrammarElement>>> alts_;
  GrammarElement end_;  // the sentinel: no rule, no ranges, not negated
  State state_;
};

// The vocabulary's tokens by their bytes, in a trie: which are allowed
// after a state.
class TokenTrie {
 public:
  // bytes[id]: what the token adds to the text ("" for a token that adds
  // none: special tokens, never allowed by the grammar).
  explicit TokenTrie(const std::vector<std::string>& bytes);
  // allowed[id] = 1 for each token whose bytes the grammar takes from
  // `from`; the count of them. `visited`: trie nodes walked (the cost).
  size_t allowed(const GrammarMatcher& m, const GrammarMatcher::State& from, std::vector<char>& allowed,
                 size_t* visited = nullptr) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int>> next;  // by byte, ascending
    std::vector<int32_t> tokens;                       // ending here
  };
  std::vector<Node> nodes_;
};

}  // namespace arch

// Following a grammar along generated text, and which tokens it allows
// next. The matcher's state is the set of places the grammar can be in
// (stacks of rule positions, each stack's top a code-point set to match
// next; an empty stack: the text so far is a whole sentence) and a UTF-8
// sequence part-read. Which tokens are allowed is found by walking a trie
// of the vocabulary's byte strings with the state, so a step visits only
// the prefixes the grammar can still take, not every token.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
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

// The states a matcher has been in, each once, with the state each byte
// leads to, found once: walking a vocabulary's trie then costs a lookup a
// node (inside a JSON string nearly every byte leads back to the same
// state). Bounded: past `max_states` it starts again.
class GrammarStates {
 public:
  explicit GrammarStates(const GrammarMatcher& m, size_t max_states = 4096) : m_(m), max_states_(max_states) {}
  int intern(const GrammarMatcher::State& s);
  // The state byte b leads to from state `id`; -1: dead.
  int next(int id, unsigned char b);
  const GrammarMatcher::State& state(int id) const { return states_[size_t(id)]; }
  size_t size() const { return states_.size(); }
  // Bumped each time the table starts again (every id handed out before is void).
  uint64_t generation() const { return generation_; }

 private:
  const GrammarMatcher& m_;
  size_t max_states_;
  std::unordered_map<std::string, int> ids_;
  std::vector<GrammarMatcher::State> states_;
  std::vector<std::array<int, 256>> next_;  // -2: not found yet
  uint64_t generation_ = 0;
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
  size_t allowed(GrammarStates& states, const GrammarMatcher::State& from, std::vector<char>& allowed,
                 size_t* visited = nullptr) const;

 private:
  // Flat, nodes numbered in depth-first order so a walk reads these in
  // order: node n's edges [edge_begin_[n], edge_begin_[n + 1]) (byte, child)
  // and the tokens ending at it [token_begin_[n], token_begin_[n + 1]).
  std::vector<uint32_t> edge_begin_, token_begin_;
  std::vector<unsigned char> edge_byte_;
  std::vector<uint32_t> edge_to_;
  std::vector<int32_t> tokens_;
};

}  // namespace arch

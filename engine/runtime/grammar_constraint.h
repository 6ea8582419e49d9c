// Decoding held to a grammar: each step's logits masked to the tokens the
// grammar can take next (the end-of-sequence ids only once the text is a
// whole sentence), the grammar advanced by each token drawn. Used as
// GenerateOptions::process_logits, so greedy, sampled and batched decoding
// all take it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/grammar_matcher.h"

namespace arch {

// A vocabulary as the grammar reads it: each token's bytes and their trie,
// made once per tokenizer (importer/text/token_bytes.h gives the bytes).
struct GrammarVocab {
  std::vector<std::string> bytes;
  TokenTrie trie;
  explicit GrammarVocab(std::vector<std::string> b) : bytes(std::move(b)), trie(bytes) {}
};

class GrammarConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const Grammar> g, std::shared_ptr<const GrammarVocab> vocab, std::vector<int32_t> eos);
  GrammarConstraint(const GrammarConstraint&) = delete;  // states_ refers to matcher_
  GrammarConstraint& operator=(const GrammarConstraint&) = delete;

  // Takes the tokens of `so_far` not taken yet, then sets every token the
  // grammar cannot take next to -inf. A dead end (a token the grammar
  // cannot take, drawn where nothing else was allowed) leaves only the
  // end-of-sequence ids.
  void mask(std::span<float> logits, const std::vector<int32_t>& so_far);
  // Whether the text so far is a whole sentence of the grammar.
  bool complete() const { return matcher_.complete(); }
  // Tokens allowed at the last step, and the trie nodes walked for them.
  size_t last_allowed() const { return last_allowed_; }
  size_t last_visited() const { return last_visited_; }

 private:
  GrammarMatcher matcher_;
  GrammarStates states_{matcher_};
  std::shared_ptr<const GrammarVocab> vocab_;
  std::vector<int32_t> eos_;
  size_t taken_ = 0;
  bool broken_ = false;
  std::vector<float> eos_logits_;
  size_t last_allowed_ = 0, last_visited_ = 0;
  // The allowed tokens of the last few states met (inside a JSON string
  // every step is in the same state): by state id, in the table's generation.
  struct Remembered {
    int state = -1;
    uint64_t generation = 0;
    std::vector<char> allowed;
    size_t count = 0;
  };
  std::vector<Remembered> remembered_;
  size_t next_slot_ = 0;
};

}  // namespace arch

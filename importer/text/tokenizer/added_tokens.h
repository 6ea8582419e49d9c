// Added tokens (special or not): found in the text before the model sees it,
// as `tokenizers`' AddedVocabulary does. Tokens with normalized=false match
// the raw text; the pieces between them are normalized and then searched for
// the normalized=true tokens (whose own text went through the normalizer).
// A search takes the leftmost, then longest, match; single_word, lstrip and
// rstrip behave as `tokenizers` defines them.
#pragma once

#include <set>
#include <unordered_map>

#include "importer/text/tokenizer/byte_trie.h"
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/vocab.h"

namespace arch::tok {

struct AddedToken {
  std::string content;
  int32_t id = -1;
  bool special = false, single_word = false, lstrip = false, rstrip = false, normalized = true;
};

class AddedVocabulary {
 public:
  // `tokens` is tokenizer.json's "added_tokens" array. Ids follow the
  // library's rule: a token the model already has keeps the model's id, a
  // new one takes the next free id past the model's vocabulary. An id the
  // file gives that differs (a gap past the vocabulary, another token's id)
  // is an error naming the token and the id.
  static Result<AddedVocabulary> build(const json& tokens, const Model& model, const Normalizer* normalizer,
                                       const std::string& where);

  // Cuts `text` into final pieces (added tokens) and normalized pieces.
  void extract_and_normalize(std::string_view text, const Normalizer* normalizer, std::vector<Split>& out) const;

  std::optional<int32_t> token_to_id(std::string_view content) const;
  const std::string* id_to_token(int32_t id) const;
  bool is_special(std::string_view content) const { return special_.count(content) > 0; }
  std::vector<int32_t> special_ids() const;
  int32_t max_id() const;
  size_t size() const { return tokens_.size(); }

 private:
  struct Matcher {
    ByteTrie trie;  // pattern -> index in tokens_
    bool first_byte[256] = {};
    bool empty = true;
  };
  struct Match {
    size_t begin, end;
    int32_t id;  // -1: text between matches
  };
  void find_matches(std::string_view s, const Matcher& m, std::vector<Match>& out) const;
  // The id tokenizer.json gives `a` against the one the rule gave it (a.id).
  Status check_given_id(const AddedToken& a, int32_t given, const Model& model, const std::string& at) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
  std::set<std::string, std::less<>> special_;
  Matcher raw_, normalized_;
};

}  // namespace arch::tok

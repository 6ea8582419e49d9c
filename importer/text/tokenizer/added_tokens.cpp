#include "importer/text/tokenizer/added_tokens.h"

#include <algorithm>

#include "engine/core/json_text.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

namespace {

bool ends_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) --i;
  return is_word_char(next_char(s, i));
}

bool starts_with_word_char(std::string_view s) {
  size_t i = 0;
  return !s.empty() && is_word_char(next_char(s, i));
}

}  // namespace

// `tokenizers` gives an added token its id itself (the model's, else the
// next free one) and only logs a warning when the file said otherwise; the
// token then encodes to an id the model was not trained with, or shares one
// with another token. So the id the file gives must be the one the rule
// gives (ids past the vocabulary follow it, one after another), and it must
// not be another token's.
Status AddedVocabulary::check_given_id(const AddedToken& a, int32_t given, const Model& model,
                                       const std::string& at) const {
  const std::string name = "'" + shown(a.content) + "'";
  const std::string* holder = model.id_to_token(given);
  if (!holder)
    if (auto it = by_id_.find(given); it != by_id_.end()) holder = &tokens_[it->second].content;
  if (holder && *holder != a.content)
    return error(at + ": " + name + " has id " + std::to_string(given) + ", which '" + shown(*holder) +
                 "' already has");
  if (given == a.id) return {};
  if (auto id = model.token_to_id(a.content))
    return error(at + ": " + name + " has id " + std::to_string(given) + ", but the vocabulary has it as id " +
                 std::to_string(*id));
  if (by_content_.count(a.content))
    return error(at + ": " + name + " has id " + std::to_string(given) +
                 ", but an earlier entry of added_tokens gave it id " + std::to_string(a.id));
  return error(at + ": " + name + " has id " + std::to_string(given) + ", but the next free id is " +
               std::to_string(a.id) + " (the ids of added tokens past the vocabulary follow it without a gap)");
}

Result<AddedVocabulary> AddedVocabulary::build(const json& tokens, const Model& model, const Normalizer* normalizer,
                                               const std::string& where) {
  AddedVocabulary v;
  if (tokens.is_null()) return v;
  if (!tokens.is_array()) return error(where + ": 'added_tokens' is " + json_type_name(tokens) + ", expected an array");
  int32_t max_added = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const json& t = tokens[i];
    std::string at = where + ": added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object()) return error(at + " is " + json_type_name(t) + ", expected an object");
    AddedToken a;
    ARCH_TRY(a.content, get_string(t, "content", at));
    ARCH_TRY(a.special, get_bool(t, "special", at, false));
    ARCH_TRY(a.single_word, get_bool(t, "single_word", at, false));
    ARCH_TRY(a.lstrip, get_bool(t, "lstrip", at, false));
    ARCH_TRY(a.rstrip, get_bool(t, "rstrip", at, false));
    ARCH_TRY(a.normalized, get_bool(t, "normalized", at, !a.special));
    if (a.content.empty()) continue;
    if (!is_valid_utf8(a.content)) return error(at + ": content is not valid UTF-8");
    if (a.special) v.special_.insert(a.content);
    // The id: already added, else the model's, else the next one past both.
    auto known = v.by_content_.find(a.content);
    if (known != v.by_content_.end()) {
      a.id = v.tokens_[known->second].id;
    } else if (auto id = model.token_to_id(a.content)) {
      a.id = *id;
    } else {
      int32_t model_size = int32_t(model.size());
      a.id = (max_added < 0) ? model_size : (max_added >= model_size || model_size == 0 ? max_added + 1 : model_size);
    }
    if (auto given = t.find("id"); given != t.end() && !given->is_null()) {
      ARCH_TRY(int32_t id, token_id(*given, at, "'" + shown(a.content) + "'"));
      ARCH_TRY_STATUS(v.check_given_id(a, id, model, at));
    }
    max_added = std::max(max_added, a.id);
    auto by_id = v.by_id_.find(a.id);
    if (by_id != v.by_id_.end()) {
      v.by_content_.erase(v.tokens_[by_id->second].content);
      v.tokens_[by_id->second] = a;  // the later entry for an id wins
      v.by_content_[a.content] = by_id->second;
    } else {
      v.by_id_[a.id] = v.tokens_.size();
      v.by_content_[a.content] = v.tokens_.size();
      v.tokens_.push_back(a);
    }
  }
  // Special tokens first, then the others: the order `tokenizers` builds its matchers in.
  std::vector<size_t> order(v.tokens_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_partition(order.begin(), order.end(), [&](size_t k) { return v.tokens_[k].special; });
  for (size_t k : order) {
    const AddedToken& a = v.tokens_[k];
    Matcher& m = a.normalized ? v.normalized_ : v.raw_;
    std::string pattern = a.content;
    if (a.normalized && normalizer) normalizer->normalize(pattern);
    if (pattern.empty()) continue;
    m.trie.insert(pattern, int32_t(k));
    m.first_byte[static_cast<unsigned char>(pattern[0])] = true;
    m.empty = false;
  }
  v.raw_.trie.freeze();
  v.normalized_.trie.freeze();
  return v;
}

void AddedVocabulary::find_matches(std::string_view s, const Matcher& m, std::vector<Match>& out) const {
  out.clear();
  size_t taken = 0;  // end of the last piece handed out
  if (!m.empty) {
    for (size_t pos = 0; pos < s.size();) {
      if (!m.first_byte[static_cast<unsigned char>(s[pos])]) {
        ++pos;
        continue;
      }
      size_t len = 0;
      int32_t idx = -1;
      m.trie.prefixes(s, pos, [&](size_t l, int32_t k) { len = l, idx = k; });  // the longest wins
      if (idx < 0) {
        ++pos;
        continue;
      }
      const AddedToken& a = tokens_[size_t(idx)];
      size_t start = pos, stop = pos + len;
      pos = stop;
      if (a.single_word) {
        bool left_ok = start == 0 || !ends_with_word_char(s.substr(0, start));
        bool right_ok = stop == s.size() || !starts_with_word_char(s.substr(stop));
        if (!left_ok || !right_ok) continue;
      }
      if (a.lstrip) {
        size_t b = start;
        while (b > taken) {
          size_t c = b - 1;
          while (c > 0 && (static_cast<unsigned char>(s[c]) & 0xC0) == 0x80) --c;
          size_t i = c;
          if (!is_whitespace(next_char(s, i))) break;
          b = c;
        }
        start = b;
      }
      if (a.rstrip) {
        while (stop < s.size()) {
          size_t i = stop;
          if (!is_whitespace(next_char(s, i))) break;
          stop = i;
        }
        pos = stop;
      }
      if (taken < start) out.push_back({taken, start, -1});
      out.push_back({start, stop, a.id});
      taken = stop;
    }
  }
  if (taken < s.size()) out.push_back({taken, s.size(), -1});
}

void AddedVocabulary::extract_and_normalize(std::string_view text, const Normalizer* normalizer,
                                            std::vector<Split>& out) const {
  std::vector<Match> raw, norm;
  find_matches(text, raw_, raw);
  for (const Match& r : raw) {
    if (r.id >= 0) {
      out.push_back(Split{std::string(text.substr(r.begin, r.end - r.begin)), r.begin == 0, r.id});
      continue;
    }
    std::string piece(text.substr(r.begin, r.end - r.begin));
    if (normalizer) normalizer->normalize(piece);
    if (normalized_.empty) {
      if (!piece.empty()) out.push_back(Split{std::move(piece), r.begin == 0, -1});
      continue;
    }
    find_matches(piece, normalized_, norm);
    for (const Match& n : norm)
      out.push_back(Split{piece.substr(n.begin, n.end - n.begin), r.begin == 0 && n.begin == 0, n.id});
  }
}

std::optional<int32_t> AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = by_content_.find(content);
  if (it == by_content_.end()) return std::nullopt;
  return tokens_[it->second].id;
}

const std::string* AddedVocabulary::id_to_token(int32_t id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second].content;
}

std::vector<int32_t> AddedVocabulary::special_ids() const {
  std::vector<int32_t> ids;
  for (const AddedToken& a : tokens_)
    if (special_.count(a.content)) ids.push_back(a.id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

int32_t AddedVocabulary::max_id() const {
  int32_t m = -1;
  for (const AddedToken& a : tokens_) m = std::max(m, a.id);
  return m;
}

}  // namespace arch::tok

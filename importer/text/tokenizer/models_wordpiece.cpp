// WordPiece (BERT): greedy longest-prefix match, later pieces carrying the
// continuing-subword prefix ("##"); a word with an unmatchable rest, or longer
// than max_input_chars_per_word, is one unk. Also WordLevel: whole-word lookup.
#include "engine/core/json_text.h"
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

namespace {

class WordPiece : public Model {
 public:
  Vocab vocab;
  int32_t unk_id = 0;
  std::string prefix;
  size_t max_chars = 100;
  size_t longest = 0;  // bytes of the longest vocab entry, bounds the search

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (char_count(word) > max_chars) {
      out.push_back(unk_id);
      return;
    }
    size_t first = out.size();
    std::string candidate;
    for (size_t start = 0; start < word.size();) {
      size_t end = std::min(word.size(), start + longest);
      while (end < word.size() && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80) --end;  // char boundary
      std::optional<int32_t> found;
      while (end > start) {
        candidate.clear();
        if (start > 0) candidate = prefix;
        candidate.append(word.substr(start, end - start));
        if ((found = vocab.find(candidate))) break;
        do --end;
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (!found) {
        out.resize(first);
        out.push_back(unk_id);
        return;
      }
      out.push_back(*found);
      start = end;
    }
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab.token(id); }
  size_t size() const override { return vocab.size(); }
  int32_t max_id() const override { return vocab.max_id(); }
  std::string kind() const override { return "WordPiece"; }
};

class WordLevel : public Model {
 public:
  Vocab vocab;
  int32_t unk_id = 0;

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    out.push_back(vocab.find(word).value_or(unk_id));
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab.token(id); }
  size_t size() const override { return vocab.size(); }
  int32_t max_id() const override { return vocab.max_id(); }
  std::string kind() const override { return "WordLevel"; }
};

}  // namespace

Result<std::unique_ptr<Model>> make_wordpiece(const json& j, const std::string& where) {
  auto wp = std::make_unique<WordPiece>();
  ARCH_TRY_STATUS(read_vocab_map(j, where, wp->vocab));
  ARCH_TRY(std::string unk, get_string(j, "unk_token", where, "[UNK]"));
  auto unk_id = wp->vocab.find(unk);
  if (!unk_id) return error(where + ": unk_token '" + shown(unk) + "' is not in the vocab");
  wp->unk_id = *unk_id;
  ARCH_TRY(wp->prefix, get_string(j, "continuing_subword_prefix", where, "##"));
  ARCH_TRY(int64_t max_chars, get_int(j, "max_input_chars_per_word", where, 100));
  if (max_chars < 0) return error(where + ": max_input_chars_per_word is negative");
  wp->max_chars = size_t(max_chars);
  for (int32_t id = 0; id <= wp->vocab.max_id(); ++id)
    if (const std::string* t = wp->vocab.token(id)) wp->longest = std::max(wp->longest, t->size());
  return std::unique_ptr<Model>(std::move(wp));
}

Result<std::unique_ptr<Model>> make_wordlevel(const json& j, const std::string& where) {
  auto wl = std::make_unique<WordLevel>();
  ARCH_TRY_STATUS(read_vocab_map(j, where, wl->vocab));
  ARCH_TRY(auto unk, get_optional_string(j, "unk_token", where));
  if (!unk || !wl->vocab.find(*unk))
    return error(where + ": WordLevel needs an unk_token that is in the vocab");
  wl->unk_id = *wl->vocab.find(*unk);
  return std::unique_ptr<Model>(std::move(wl));
}

}  // namespace arch::tok

// Unigram (T5, ALBERT, XLNet exports): the most probable segmentation by
// Viterbi over the lattice of vocabulary pieces, as `tokenizers`'
// encode_optimized does it: characters no piece covers become unk (score
// min - 10), neighbouring unks fuse, and with byte_fallback an unknown piece
// becomes its <0xNN> bytes.
#include <cstdio>

#include "engine/core/json_text.h"
#include "importer/text/tokenizer/byte_trie.h"
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

namespace {

constexpr double kUnkPenalty = 10.0;

class Unigram : public Model {
 public:
  Vocab vocab;
  std::vector<double> scores;
  ByteTrie trie;
  int32_t unk_id = 0;
  double min_score = 0;
  bool byte_fallback = false;

  void tokenize(std::string_view s, std::vector<int32_t>& out) const override {
    if (s.empty()) return;
    struct Node {
      int32_t id = -1;
      double score = 0;
      int64_t start = -1;  // -1: not reached yet
    };
    std::vector<Node> best(s.size() + 1);
    double unk_score = min_score - kUnkPenalty;
    for (size_t start = 0; start < s.size();) {
      double here = best[start].score;
      size_t char_len = utf8_len(static_cast<unsigned char>(s[start]));
      bool single = false;
      trie.prefixes(s, start, [&](size_t len, int32_t id) {
        Node& t = best[start + len];
        double cand = here + scores[size_t(id)];
        if (t.start < 0 || cand > t.score) t = {id, cand, int64_t(start)};
        if (len == char_len) single = true;
      });
      if (!single) {
        Node& t = best[start + char_len];
        double cand = here + unk_score;
        if (t.start < 0 || cand > t.score) t = {unk_id, cand, int64_t(start)};
      }
      start += char_len;
    }
    // Walk back; consecutive unks are fused into one piece.
    std::vector<std::pair<size_t, size_t>> pieces;  // [begin, end) in s
    std::vector<bool> is_unk;
    for (size_t end = s.size(); end > 0;) {
      const Node& n = best[end];
      size_t begin = size_t(n.start);
      bool unk = n.id == unk_id;
      if (unk && !is_unk.empty() && is_unk.back()) pieces.back().first = begin;
      else pieces.emplace_back(begin, end), is_unk.push_back(unk);
      end = begin;
    }
    for (size_t k = pieces.size(); k-- > 0;) {
      std::string_view piece = s.substr(pieces[k].first, pieces[k].second - pieces[k].first);
      if (auto id = vocab.find(piece)) {
        out.push_back(*id);
        continue;
      }
      if (byte_fallback) {
        std::vector<int32_t> bytes;
        for (unsigned char b : piece) {
          char name[8];
          std::snprintf(name, sizeof name, "<0x%02X>", b);
          if (auto id = vocab.find(name)) bytes.push_back(*id);
          else break;
        }
        if (bytes.size() == piece.size()) {
          out.insert(out.end(), bytes.begin(), bytes.end());
          continue;
        }
      }
      out.push_back(unk_id);
    }
  }
  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab.token(id); }
  size_t size() const override { return scores.size(); }
  int32_t max_id() const override { return int32_t(scores.size()) - 1; }
  std::string kind() const override { return "Unigram"; }
};

}  // namespace

Result<std::unique_ptr<Model>> make_unigram(const json& j, const std::string& where) {
  auto u = std::make_unique<Unigram>();
  auto vit = j.find("vocab");
  if (vit == j.end() || !vit->is_array()) return error(where + ": field 'vocab' must be an array of [piece, score]");
  if (vit->empty()) return error(where + ": the Unigram vocab is empty");
  u->min_score = 1e300;
  for (size_t id = 0; id < vit->size(); ++id) {
    const json& e = (*vit)[id];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      return error(where + ": vocab[" + std::to_string(id) + "] is " + shown(e.dump()) + ", expected [piece, score]");
    std::string piece = e[0].get<std::string>();
    double score = e[1].get<double>();
    u->vocab.add(piece, int32_t(id));
    u->scores.push_back(score);
    u->min_score = std::min(u->min_score, score);
  }
  for (size_t id = 0; id < vit->size(); ++id) {
    const std::string& piece = (*vit)[id][0].get_ref<const std::string&>();
    if (!piece.empty()) u->trie.insert(piece, *u->vocab.find(piece));
  }
  u->trie.freeze();
  ARCH_TRY(int64_t unk, get_int(j, "unk_id", where, -1));
  if (unk < 0 || size_t(unk) >= u->scores.size())
    return error(where + ": unk_id " + std::to_string(unk) + " is missing or outside the vocab");
  u->unk_id = int32_t(unk);
  ARCH_TRY(u->byte_fallback, get_bool(j, "byte_fallback", where, false));
  return std::unique_ptr<Model>(std::move(u));
}

}  // namespace arch::tok

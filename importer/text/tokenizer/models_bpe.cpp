// BPE: byte-level (GPT-2, Llama 3, Qwen) and SentencePiece-style (`▁`, byte
// fallback, unk). Merging follows `tokenizers`' Word::merge_all: a min-heap of
// candidate pairs by (merge rank, position) over a linked list of symbols, so a
// word of n symbols costs O(n log n). Finished words go to a bounded cache.
#include <array>
#include <cstdio>
#include <mutex>
#include <queue>
#include <shared_mutex>
#include <unordered_map>

#include "engine/core/json_text.h"
#include "importer/text/tokenizer/components.h"
#include "importer/text/tokenizer/unicode.h"
#include "importer/text/tokenizer/vocab.h"
#include "importer/text/tokenizer/vocab_json.h"

namespace arch::tok {

namespace {

constexpr size_t kCacheCapacity = 10000;
constexpr size_t kCacheMaxWordBytes = 256;

struct MergeTarget {
  uint32_t rank;
  int32_t id;
};

inline uint64_t pair_key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }

class Bpe : public Model {
 public:
  Vocab vocab;
  std::unordered_map<uint64_t, MergeTarget> merges;
  std::optional<int32_t> unk_id;
  std::optional<std::string> prefix, suffix;  // continuing_subword_prefix, end_of_word_suffix
  bool fuse_unk = false, byte_fallback = false, ignore_merges = false;
  std::array<int32_t, 256> byte_ids{};  // "<0xNN>" ids, -1 where absent

  void tokenize(std::string_view word, std::vector<int32_t>& out) const override {
    if (word.empty()) return;
    if (ignore_merges) {
      if (auto id = vocab.find(word)) {
        out.push_back(*id);
        return;
      }
    }
    bool cacheable = word.size() < kCacheMaxWordBytes;
    if (cacheable) {
      std::shared_lock lock(cache_mutex_);
      auto it = cache_.find(word);
      if (it != cache_.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    size_t first = out.size();
    merge_word(word, out);
    if (cacheable) {
      std::unique_lock lock(cache_mutex_);
      if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
    }
  }

  std::optional<int32_t> token_to_id(std::string_view t) const override { return vocab.find(t); }
  const std::string* id_to_token(int32_t id) const override { return vocab.token(id); }
  size_t size() const override { return vocab.size(); }
  int32_t max_id() const override { return vocab.max_id(); }
  std::string kind() const override { return "BPE"; }

 private:
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    uint32_t len;  // bytes of the word it covers; 0 once merged away
  };
  struct Candidate {
    uint32_t rank, pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };

  void merge_word(std::string_view w, std::vector<int32_t>& out) const {
    std::vector<Symbol> syms;
    syms.reserve(w.size());
    auto add = [&](int32_t id, uint32_t len) {
      int32_t n = int32_t(syms.size());
      syms.push_back({id, n - 1, -1, len});
      if (n > 0) syms[n - 1].next = n;
    };
    int32_t unk = -1;  // a pending unk and the bytes it covers
    uint32_t unk_len = 0;
    std::string piece;
    for (size_t i = 0; i < w.size();) {
      size_t b = i;
      next_char(w, i);
      uint32_t len = uint32_t(i - b);
      piece.clear();
      if (b > 0 && prefix) piece += *prefix;
      piece.append(w.substr(b, len));
      if (i == w.size() && suffix) piece += *suffix;
      if (auto id = vocab.find(piece)) {
        if (unk >= 0) add(unk, unk_len), unk = -1;
        add(*id, len);
        continue;
      }
      if (byte_fallback) {
        bool all = true;
        for (unsigned char c : piece) all &= byte_ids[c] >= 0;
        if (all) {
          for (unsigned char c : piece) add(byte_ids[c], 1);
          continue;
        }
      }
      if (unk_id) {
        if (unk >= 0 && fuse_unk) {
          unk_len += len;
        } else {
          if (unk >= 0) add(unk, unk_len);
          unk = *unk_id, unk_len = len;
        }
      }
      // no unk token: the character is dropped, as `tokenizers` does
    }
    if (unk >= 0) add(unk, unk_len);

    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
    for (size_t k = 0; k + 1 < syms.size(); ++k) {
      auto it = merges.find(pair_key(syms[k].id, syms[k + 1].id));
      if (it != merges.end()) queue.push({it->second.rank, uint32_t(k), it->second.id});
    }
    while (!queue.empty()) {
      Candidate top = queue.top();
      queue.pop();
      Symbol& left = syms[top.pos];
      if (left.len == 0 || left.next < 0) continue;
      int32_t right_pos = left.next;
      Symbol right = syms[size_t(right_pos)];
      auto it = merges.find(pair_key(left.id, right.id));
      if (it == merges.end() || it->second.id != top.new_id) continue;  // stale entry
      left.id = top.new_id;
      left.len += right.len;
      left.next = right.next;
      syms[size_t(right_pos)].len = 0;
      if (right.next >= 0) syms[size_t(right.next)].prev = int32_t(top.pos);
      if (left.prev >= 0) {
        auto p = merges.find(pair_key(syms[size_t(left.prev)].id, left.id));
        if (p != merges.end()) queue.push({p->second.rank, uint32_t(left.prev), p->second.id});
      }
      if (left.next >= 0) {
        auto n = merges.find(pair_key(left.id, syms[size_t(left.next)].id));
        if (n != merges.end()) queue.push({n->second.rank, top.pos, n->second.id});
      }
    }
    for (const Symbol& s : syms)
      if (s.len) out.push_back(s.id);
  }

  mutable std::shared_mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace

Result<std::unique_ptr<Model>> make_bpe(const json& j, const std::string& where) {
  auto bpe = std::make_unique<Bpe>();
  ARCH_TRY_STATUS(read_vocab_map(j, where, bpe->vocab));

  ARCH_TRY(bpe->prefix, get_optional_string(j, "continuing_subword_prefix", where));
  ARCH_TRY(bpe->suffix, get_optional_string(j, "end_of_word_suffix", where));
  ARCH_TRY(bpe->fuse_unk, get_bool(j, "fuse_unk", where, false));
  ARCH_TRY(bpe->byte_fallback, get_bool(j, "byte_fallback", where, false));
  ARCH_TRY(bpe->ignore_merges, get_bool(j, "ignore_merges", where, false));
  ARCH_TRY(auto dropout, get_optional_number(j, "dropout", where));
  if (dropout && *dropout != 0.0)
    return error(where + ": BPE dropout " + std::to_string(*dropout) +
                 " is not supported (it makes encoding random; inference uses null)");
  ARCH_TRY(auto unk, get_optional_string(j, "unk_token", where));
  if (unk) {
    bpe->unk_id = bpe->vocab.find(*unk);
    if (!bpe->unk_id) return error(where + ": unk_token '" + shown(*unk) + "' is not in the vocab");
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    bpe->byte_ids[size_t(b)] = bpe->vocab.find(name).value_or(-1);
  }

  auto mit = j.find("merges");
  if (mit == j.end() || mit->is_null()) return error(where + ": missing field 'merges'");
  if (!mit->is_array()) return error(where + ": field 'merges' is " + json_type_name(*mit) + ", expected an array");
  size_t prefix_len = bpe->prefix ? bpe->prefix->size() : 0;
  bpe->merges.reserve(mit->size());
  std::string merged;
  for (size_t rank = 0; rank < mit->size(); ++rank) {
    const json& m = (*mit)[rank];
    std::string_view a, b;
    if (m.is_string()) {
      std::string_view line = m.get_ref<const std::string&>();
      size_t sp = line.find(' ');
      if (sp == std::string::npos || line.find(' ', sp + 1) != std::string::npos)
        return error(where + ": merges[" + std::to_string(rank) + "] is \"" + shown(line) + "\", expected \"a b\"");
      a = line.substr(0, sp);
      b = line.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get_ref<const std::string&>();
      b = m[1].get_ref<const std::string&>();
    } else {
      return error(where + ": merges[" + std::to_string(rank) + "] is " + shown(m.dump()) +
                   ", expected \"a b\" or [\"a\", \"b\"]");
    }
    auto ia = bpe->vocab.find(a), ib = bpe->vocab.find(b);
    if (!ia || !ib)
      return error(where + ": merges[" + std::to_string(rank) + "]: '" + shown(ia ? b : a) + "' is not in the vocab");
    if (b.size() < prefix_len)
      return error(where + ": merges[" + std::to_string(rank) + "]: '" + shown(b) + "' is shorter than the subword prefix");
    merged.assign(a);
    merged.append(b.substr(prefix_len));
    auto im = bpe->vocab.find(merged);
    if (!im)
      return error(where + ": merges[" + std::to_string(rank) + "]: the merged token '" + shown(merged) +
                   "' is not in the vocab");
    bpe->merges[pair_key(*ia, *ib)] = MergeTarget{uint32_t(rank), *im};  // a repeated pair keeps the later rank
  }
  return std::unique_ptr<Model>(std::move(bpe));
}

}  // namespace arch::tok

// A byte trie built once, then frozen into flat arrays: prefix search for the
// Unigram lattice and longest match for added tokens.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace arch::tok {

class ByteTrie {
 public:
  ByteTrie() { build_.emplace_back(); }

  void insert(std::string_view key, int32_t value) {
    uint32_t node = 0;
    for (unsigned char b : key) {
      auto& kids = build_[node].kids;
      auto it = std::find_if(kids.begin(), kids.end(), [b](auto& k) { return k.first == b; });
      if (it != kids.end()) {
        node = it->second;
      } else {
        uint32_t child = uint32_t(build_.size());
        kids.emplace_back(b, child);
        build_.emplace_back();
        node = child;
      }
    }
    build_[node].value = value;
  }

  // Flattens the trie; insert() may not be called afterwards.
  void freeze() {
    first_.assign(build_.size() + 1, 0);
    values_.resize(build_.size());
    for (size_t n = 0; n < build_.size(); ++n) {
      auto& kids = build_[n].kids;
      std::sort(kids.begin(), kids.end());
      first_[n + 1] = first_[n] + uint32_t(kids.size());
      values_[n] = build_[n].value;
      for (auto [b, c] : kids) {
        bytes_.push_back(b);
        targets_.push_back(c);
      }
    }
    build_.clear();
    build_.shrink_to_fit();
  }

  // f(length, value) for every key that is a prefix of text[pos..], shortest first.
  template <class F>
  void prefixes(std::string_view text, size_t pos, F&& f) const {
    uint32_t node = 0;
    for (size_t i = pos; i < text.size(); ++i) {
      if (!child(node, static_cast<unsigned char>(text[i]), node)) return;
      if (values_[node] >= 0) f(i + 1 - pos, values_[node]);
    }
  }

  bool empty() const { return bytes_.empty(); }

 private:
  bool child(uint32_t node, unsigned char b, uint32_t& out) const {
    auto begin = bytes_.begin() + first_[node], end = bytes_.begin() + first_[node + 1];
    auto it = std::lower_bound(begin, end, b);
    if (it == end || *it != b) return false;
    out = targets_[size_t(it - bytes_.begin())];
    return true;
  }

  struct BuildNode {
    std::vector<std::pair<unsigned char, uint32_t>> kids;
    int32_t value = -1;
  };
  std::vector<BuildNode> build_;
  std::vector<uint32_t> first_;
  std::vector<unsigned char> bytes_;
  std::vector<uint32_t> targets_;
  std::vector<int32_t> values_;
};

}  // namespace arch::tok

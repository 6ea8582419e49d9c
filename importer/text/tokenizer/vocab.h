// A token vocabulary: string -> id with heterogeneous lookup, and id -> string.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace arch::tok {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class Vocab {
 public:
  // False if `token` was already present (the new id then replaces the old).
  bool add(std::string token, int32_t id) {
    auto [it, fresh] = ids_.insert_or_assign(std::move(token), id);
    if (size_t(id) >= tokens_.size()) tokens_.resize(size_t(id) + 1, nullptr);
    tokens_[size_t(id)] = &it->first;
    return fresh;
  }
  std::optional<int32_t> find(std::string_view token) const {
    auto it = ids_.find(token);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  const std::string* token(int32_t id) const {
    return id >= 0 && size_t(id) < tokens_.size() ? tokens_[size_t(id)] : nullptr;
  }
  size_t size() const { return ids_.size(); }
  int32_t max_id() const { return int32_t(tokens_.size()) - 1; }
  void reserve(size_t n) { ids_.reserve(n); }

 private:
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> ids_;
  std::vector<const std::string*> tokens_;  // node-based map: pointers stay valid
};

}  // namespace arch::tok

// Shared reference tokenizers (../shared/tokenizers), each loaded once per
// test process.
#pragma once

#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "importer/text/tokenizer/tokenizer.h"
#include "tests/shared_data.h"

namespace arch::testing {

inline std::string tokenizer_dir(const std::string& name) { return shared_dir() + "/tokenizers/" + name; }

// The loaded tokenizer, or null with `err` set.
inline std::shared_ptr<const Tokenizer> shared_tokenizer(const std::string& name, std::string* err = nullptr) {
  static std::mutex mu;
  static std::map<std::string, Result<std::shared_ptr<const Tokenizer>>> cache;
  std::lock_guard lock(mu);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load_tokenizer(tokenizer_dir(name))).first;
  if (!it->second.ok()) {
    if (err) *err = it->second.error().message;
    return nullptr;
  }
  return it->second.value();
}

inline std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> rows;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

inline std::string ids_str(const std::vector<int32_t>& ids) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < ids.size(); ++i) s << (i ? ", " : "") << ids[i];
  s << "]";
  return s.str();
}

}  // namespace arch::testing

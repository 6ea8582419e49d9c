#include "importer/text/tokenizer/json_sizes.h"

#include <vector>

#include "engine/core/limits.h"

namespace arch::tok {

namespace {

// An open array or object: its entries so far, and the key it sits under.
struct Open {
  bool object;
  int64_t entries = 0;
  std::string key;  // of the entry being read (objects)
};

struct OverLimit {
  Error error;
};

// "model.merges": where the open containers sit.
std::string path(const std::vector<Open>& open) {
  std::string p;
  for (size_t i = 0; i + 1 < open.size(); ++i) {
    if (!open[i].object) {
      p += "[]";
      continue;
    }
    p += (p.empty() ? "" : ".") + open[i].key;
  }
  return p.empty() ? "the top level" : "'" + p + "'";
}

}  // namespace

Result<json> parse_tokenizer_json(std::string_view text, const std::string& source) {
  const int64_t most_entries = limit("tokenizer_entries"), most_depth = limit("json_depth");
  std::vector<Open> open;
  auto entry = [&] {
    if (open.empty() || ++open.back().entries <= most_entries) return;
    throw OverLimit{over_limit("tokenizer_entries", source, "the entries of " + path(open) + ", counted so far",
                               open.back().entries)};
  };
  auto watch = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (!open.empty() && !open.back().object) entry();
        if (int64_t(open.size()) >= most_depth)
          throw OverLimit{over_limit("json_depth", source, "the nesting of its arrays and objects", most_depth + 1)};
        open.push_back(Open{event == E::object_start, 0, {}});
        break;
      case E::object_end:
      case E::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case E::key:
        if (!open.empty()) open.back().key = parsed.get<std::string>();
        entry();
        break;
      case E::value:
        if (!open.empty() && !open.back().object) entry();
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), watch, /*allow_exceptions=*/false);
  } catch (const OverLimit& e) {
    return e.error;
  }
}

}  // namespace arch::tok

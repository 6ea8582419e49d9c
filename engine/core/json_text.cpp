#include "engine/core/json_text.h"

#include "engine/core/limits.h"

#include <set>
#include <cstdint>
#include <vector>

namespace arch {

namespace {

// 1-based line and column of byte offset `pos` in `text`.
std::pair<size_t, size_t> line_col(std::string_view text, size_t pos) {
  pos = std::min(pos, text.size());
  size_t line = 1, col = 1;
  for (size_t i = 0; i < pos; ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {line, col};
}

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line
// 1, column 2: syntax error ..."; keep only the reason after the position.
std::string reason(const nlohmann::json::parse_error& e) {
  std::string w = e.what();
  size_t at = w.find("column ");
  size_t colon = at == std::string::npos ? std::string::npos : w.find(": ", at);
  return colon == std::string::npos ? w : w.substr(colon + 2);
}

}  // namespace

Result<nlohmann::json> parse_json(std::string_view text, const std::string& source) {
  // The innermost open object's keys: a key seen twice there is a duplicate.
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  // Everything that walks a JSON value after this (configs, templates'
  // values) recurses: a 100,000-deep array stops here, at its depth.
  const int64_t most_depth = limit("json_depth");
  struct TooDeep {};
  auto watch_keys = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= most_depth) throw TooDeep{};
    if (event == E::object_start) open_objects.emplace_back();
    else if (event == E::object_end && !open_objects.empty()) open_objects.pop_back();
    else if (event == E::key && !open_objects.empty() && duplicate.empty() &&
             !open_objects.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  try {
    nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), watch_keys);
    if (!duplicate.empty()) return error(source + ": invalid JSON: duplicate key '" + duplicate + "'");
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based: the position of the character that failed.
    auto [line, col] = line_col(text, e.byte ? e.byte - 1 : 0);
    return error(source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                 ": invalid JSON: " + reason(e));
  } catch (const nlohmann::json::exception& e) {
    return error(source + ": invalid JSON: " + e.what());
  } catch (const TooDeep&) {
    return over_limit("json_depth", source, "the nesting of its arrays and objects", most_depth + 1);
  }
}

Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text, const std::string& source) {
  auto checked = parse_json(text, source);
  if (!checked.ok()) return checked.error();
  return nlohmann::ordered_json::parse(text.begin(), text.end());  // checked above: it parses
}

std::string json_type_name(const nlohmann::json& j) {
  if (j.is_number_integer()) return "integer";
  if (j.is_number_float()) return "number";
  return j.type_name();
}

}  // namespace arch

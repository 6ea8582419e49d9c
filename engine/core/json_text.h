// Parsing JSON that a user handed us (config.json, safetensors headers,
// index files) into a value or an error that points at the spot.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch {

// `source` names the text in messages, e.g. "model.safetensors: header".
// Errors: "SOURCE:LINE:COL: invalid JSON: <reason>". A key repeated within one
// object is an error too: the parser would silently keep only the last one.
Result<nlohmann::json> parse_json(std::string_view text, const std::string& source);
// The same checks, its objects' keys kept in the order written (a JSON
// Schema's properties).
Result<nlohmann::ordered_json> parse_ordered_json(std::string_view text, const std::string& source);

// "object", "array", "string", "number", ... for messages about wrong types.
std::string json_type_name(const nlohmann::json& j);

}  // namespace arch

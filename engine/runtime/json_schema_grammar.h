// A JSON Schema as GBNF text (engine/runtime/grammar.h) whose sentences are
// JSON texts valid under the schema: objects (properties in the order the
// schema lists them, required ones always, optional ones where the model
// writes them), arrays (items, minItems, maxItems), strings (minLength,
// maxLength), numbers, integers, booleans, null, enum, const, anyOf, a
// list of types, and $ref into $defs / definitions (recursive ones too).
// Annotations (title, description, examples, default, $comment) constrain
// nothing. Every other keyword is refused by name (pattern, format,
// minimum, oneOf, ...), so no constraint a request asks for is silently
// dropped.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch {

Result<std::string> json_schema_gbnf(const nlohmann::ordered_json& schema, const std::string& where);

// A schema's rules alone, to put beside others in one grammar: their names
// start with `prefix`, `top` is the rule (or expression) of a valid value,
// and they refer to json_common_gbnf()'s rules (value, string, ws, ...).
struct SchemaRules {
  std::string top, rules;
};
Result<SchemaRules> json_schema_rules(const nlohmann::ordered_json& schema, const std::string& where, const std::string& prefix);
// JSON's own rules (ws, value, object, array, string, number, ...), once per grammar.
std::string json_common_gbnf();

// Any JSON object (the OpenAI API's response_format {"type": "json_object"}).
std::string json_object_gbnf();

}  // namespace arch

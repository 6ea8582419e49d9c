// Attribute, item and slice access, as jinja2's sandboxed environment does it:
//   obj.name     the Python attribute (a method such as str.strip or
//                dict.items, a namespace or loop field), else obj["name"],
//                else undefined ("'dict object' has no attribute 'name'")
//   obj[key]     the item, else for a string key the attribute, else undefined
//   obj[a:b:c]   Python slicing of str, list and tuple
// Access on an undefined value is an error; on a defined value it never is.
#pragma once

#include <optional>
#include <string>

#include "engine/core/error.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

Result<Value> get_attr(const Value& obj, const std::string& name);
Result<Value> get_item(const Value& obj, const Value& key);
// Omitted parts are none.
Result<Value> get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Only the Python attribute (what the `attr` filter reads): nullopt if none.
std::optional<Value> python_attribute(const Value& obj, const std::string& name);

}  // namespace arch::jinja

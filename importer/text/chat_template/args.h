// Binding call arguments to parameters the way Python does, for filters,
// tests, methods and globals implemented in C++.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

// Whether a filter or test name is available: jinja2 knows some that this
// interpreter does not implement, and those get their own message.
enum class Support { Yes, NotImplemented, Unknown };

struct Param {
  const char* name;
  std::optional<Value> default_value;  // nullopt: required
};

// Positional arguments fill parameters in order, then keywords by name.
// Errors name `what`: "too many arguments", "unexpected keyword argument
// 'x'", "missing argument 'y'", "got multiple values for argument 'z'".
Result<std::vector<Value>> bind_args(const std::string& what, const CallArgs& args,
                                     const std::vector<Param>& params);

// Argument checks shared by the C++ callables.
Result<int64_t> int_arg(const std::string& what, const char* param, const Value& v);
Result<std::string> str_arg(const std::string& what, const char* param, const Value& v);

}  // namespace arch::jinja

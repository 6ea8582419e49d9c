// Python's operators on template values: arithmetic (+ - * / // % **),
// jinja2's string concatenation (~), comparisons, membership, and the
// printf-style "%" formatting of strings (also the `format` filter).
#pragma once

#include <string>

#include "engine/core/error.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

// op: "+", "-", "*", "/", "//", "%", "**", "~". Using an undefined operand
// is jinja2's UndefinedError; mismatched types are Python's TypeError text.
Result<Value> binary_op(const std::string& op, const Value& a, const Value& b);
Result<Value> negate(const Value& a);
Result<Value> unary_plus(const Value& a);

// op: "==", "!=", "<", "<=", ">", ">=".
Result<bool> compare_op(const std::string& op, const Value& a, const Value& b);
// item in container
Result<bool> contains(const Value& container, const Value& item);

// fmt % args: a tuple gives positional arguments, a dict named ones.
Result<std::string> percent_format(const std::string& fmt, const Value& args);

}  // namespace arch::jinja

// Jinja2's tests ({% if x is defined %}): defined undefined none boolean true
// false integer float number string mapping iterable sequence callable lower
// upper odd even divisibleby eq equalto == ne != gt greaterthan > ge >= lt
// lessthan < le <= in sameas escaped filter test.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "importer/text/chat_template/args.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

Support test_support(std::string_view name);

// Errors are unlocated.
Result<bool> apply_test(const std::string& name, const Value& value, const CallArgs& args);

}  // namespace arch::jinja

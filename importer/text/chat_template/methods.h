// Python methods templates call on values: 'x'.strip(), s.split('</think>'),
// d.get('k', 1), d.items(), xs.index(v), "{} {}".format(a, b), ...
//
// Methods that modify a list or dict (append, pop, update, ...) exist but
// fail when called, as in transformers' immutable sandbox. Real Python
// methods this interpreter does not implement fail with a message naming them.
#pragma once

#include <optional>
#include <string>

#include "importer/text/chat_template/value.h"

namespace arch::jinja {

// The bound method `name` of a str, dict, list or tuple; nullopt when Python
// has no such attribute.
std::optional<Value> bound_method(const Value& obj, const std::string& name);

}  // namespace arch::jinja

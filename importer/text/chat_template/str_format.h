// Python's str.format() ("{0} {name!r:>8}") and the format-spec mini
// language (format(value, spec)), as the sandboxed formatter of jinja2 runs
// them: fields look attributes and items up the way templates do.
#pragma once

#include <string>

#include "engine/core/error.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

Result<std::string> py_str_format(const std::string& fmt, const CallArgs& args);

// format(value, spec): [[fill]align][sign][#][0][width][,|_][.precision][type]
Result<std::string> py_format_value(const Value& v, const std::string& spec);

}  // namespace arch::jinja

// Python's json.dumps over template values: what transformers' `tojson`
// filter writes (it calls json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) with the options the template passes).
#pragma once

#include <optional>
#include <string>

#include "engine/core/error.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;      // nullopt: one line
  std::optional<std::string> item_separator;  // default ", " (one line) or "," (indented)
  std::optional<std::string> key_separator;   // default ": "
  bool sort_keys = false;
};

// Errors as Python's: "Object of type Undefined is not JSON serializable".
Result<std::string> json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace arch::jinja

// Parsing a .arch file into its syntax tree.
#pragma once

#include <string>

#include "dsl/ast.h"
#include "engine/error.h"

namespace arch::dsl {

// `path` is used in diagnostics; `source` is the file's text.
Result<Template> parse_template(const std::string& path, std::string source);
Result<Template> parse_template_file(const std::string& path);

}  // namespace arch::dsl

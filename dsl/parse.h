// Parsing a .arch file into its syntax tree.
#pragma once

#include <string>

#include "dsl/ast.h"
#include "engine/core/error.h"

namespace arch::dsl {

// `path` is used in diagnostics; `source` is the file's text. Imports stay
// unresolved (check and instantiate refuse them).
Result<Template> parse_template(const std::string& path, std::string source);
// Reads the file and resolves its imports (relative to the file): what the
// file defines by the same name as an import replaces the import's config
// field, flag, block or graph in place; its weight declarations are matched
// first. So a family extends another by importing it and redefining blocks.
// Two graphs of one name in a file, or from two of its imports (the file
// not defining it itself), are an error naming both; imports nest at most
// template_depth deep, and a cycle is an error.
Result<Template> parse_template_file(const std::string& path);

}  // namespace arch::dsl

// Running a parsed chat template over a context, with jinja2's scoping:
//   - each iteration of a for loop, each macro call, each with/set block
//     body gets its own scope; `set` writes the innermost one, so a
//     variable set inside a loop is gone after it (hence namespace());
//   - if/elif/else do not open a scope;
//   - names resolve innermost first, then the context, then the globals;
//     an unknown name is undefined, not an error.
// Runtime errors carry the line and column of the expression that failed.
// What a render may spend is bounded by the named limits of budget.h: the
// evaluation frames (blocks, expressions, macro calls) by chat_depth, so a
// render needs under 1 KB of stack a level (256 KB by default). Macros (which
// hold the scope that holds them) and namespaces (which may hold themselves)
// are unlinked when a render ends, so nothing it made outlives it.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "engine/core/error.h"
#include "importer/text/chat_template/ast.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

struct RenderOptions {
  // What strftime_now() sees; unset: the current time.
  std::optional<std::chrono::system_clock::time_point> now;
};

// `context` is a dict value (the template's variables).
Result<std::string> render_body(const Body& body, const Value& context, const RenderOptions& options);

}  // namespace arch::jinja

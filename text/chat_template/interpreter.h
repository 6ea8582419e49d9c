// Running a parsed chat template over a context, with jinja2's scoping:
//   - each iteration of a for loop, each macro call, each with/set block
//     body gets its own scope; `set` writes the innermost one, so a
//     variable set inside a loop is gone after it (hence namespace());
//   - if/elif/else do not open a scope;
//   - names resolve innermost first, then the context, then the globals;
//     an unknown name is undefined, not an error.
// Runtime errors carry the line and column of the expression that failed.
// Macro recursion (100 calls) and overall nesting are bounded, so a render
// needs at most about 1.5 MB of stack.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "core/error.h"
#include "text/chat_template/ast.h"
#include "text/chat_template/value.h"

namespace arch::jinja {

struct RenderOptions {
  // What strftime_now() sees; unset: the current time.
  std::optional<std::chrono::system_clock::time_point> now;
};

// `context` is a dict value (the template's variables).
Result<std::string> render_body(const Body& body, const Value& context, const RenderOptions& options);

}  // namespace arch::jinja

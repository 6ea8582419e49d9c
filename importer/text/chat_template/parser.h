// Tokens to syntax tree, following jinja2's grammar and operator precedence
// (lowest first):
//   a if c else b  |  or  |  and  |  not  |  == != < <= > >= in, not in (chained)
//   + -  |  ~  |  * / // %  |  **  |  unary - +  |  x.attr x[i] x[a:b:c] f(...)
//   then filters (x | f(...)) and tests (x is [not] t(...)), which bind
//   tighter than every binary operator.
// Statements: for (with loop filter, tuple targets, else), if/elif/else, set
// (also ns.attr and block form), macro, filter, with, print, break, continue,
// and transformers' generation block. Filter and test names are checked here,
// as jinja2 checks them when it compiles.
#pragma once

#include <vector>

#include "engine/core/error.h"
#include "importer/text/chat_template/ast.h"
#include "importer/text/chat_template/lexer.h"

namespace arch::jinja {

// Errors: "chat_template:LINE:COL: message" naming the construct.
Result<Body> parse_tokens(const std::vector<Token>& tokens);

}  // namespace arch::jinja

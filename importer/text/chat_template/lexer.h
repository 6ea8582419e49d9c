// Splitting a chat template into tokens, exactly as jinja2's lexer does with
// the options transformers uses (trim_blocks=True, lstrip_blocks=True,
// keep_trailing_newline=False):
//
//   - "\r\n" and "\r" become "\n"; one trailing newline of the template is dropped;
//   - text runs between tags become Text tokens; {# comments #} vanish;
//     {% raw %}...{% endraw %} is text;
//   - "{%-", "{{-", "{#-" strip all whitespace before the tag; "-%}", "-}}",
//     "-#}" strip all whitespace after it;
//   - trim_blocks: a "%}" or "#}" eats one newline right after it ("+%}" does not);
//   - lstrip_blocks: spaces and tabs from the start of a line up to a "{%" or
//     "{#" are removed ("{%+" keeps them; "{{" is never affected);
//   - inside tags: names, strings (Python escapes), integers, floats and
//     operators; "%}" / "}}" only end a tag outside brackets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/error.h"

namespace arch::jinja {

struct Pos {
  int line = 1;
  int col = 1;  // in characters, 1-based
};

enum class Tok {
  Text,        // text: the (whitespace-controlled) template data
  VarBegin,    // {{
  VarEnd,      // }}
  BlockBegin,  // {%
  BlockEnd,    // %}
  Name,        // text: identifier (keywords too: if, for, in, not, ...)
  String,      // text: decoded value
  Int,         // ival
  Float,       // fval
  Op,          // text: "+", "//", "==", "(", ...
  Eof,
};

struct Token {
  Tok kind = Tok::Eof;
  std::string text;
  int64_t ival = 0;
  double fval = 0;
  Pos pos;
};

// The template text after newline normalisation (what positions refer to).
std::string normalize_template_source(std::string_view source);

// Errors: "chat_template:LINE:COL: message".
Result<std::vector<Token>> lex_template(std::string_view normalized_source);

// "chat_template:LINE:COL: " + message
std::string located(Pos pos, const std::string& message);

}  // namespace arch::jinja

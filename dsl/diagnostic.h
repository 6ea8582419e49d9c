// Diagnostics point at the template text:
//   families/llama.arch:42:9: error: message
//       q = x @ L.self_attn.q_proj.weight
//           ^
#pragma once

#include <string>

#include "dsl/ast.h"
#include "engine/core/error.h"

namespace arch::dsl {

struct SourceRef {
  std::string path;
  const std::string* source = nullptr;  // may be null: no source line shown
};

std::string format_diagnostic(const SourceRef& src, Loc loc, const std::string& message,
                              const char* severity = "error");

inline Error diag(const SourceRef& src, Loc loc, const std::string& message) {
  return Error{format_diagnostic(src, loc, message)};
}

// A diagnostic in whichever of the template's files `loc` is in.
Error diag(const Template& t, Loc loc, const std::string& message);

}  // namespace arch::dsl

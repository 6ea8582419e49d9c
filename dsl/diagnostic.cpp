#include "dsl/diagnostic.h"

namespace arch::dsl {

std::string format_diagnostic(const SourceRef& src, Loc loc, const std::string& message,
                              const char* severity) {
  std::string out = src.path + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col) +
                    ": " + severity + ": " + message;
  if (!src.source || loc.line <= 0) return out;
  // Find the line (1-based) and print it with a caret under the column.
  size_t start = 0;
  for (int l = 1; l < loc.line && start != std::string::npos; ++l) {
    start = src.source->find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start > src.source->size()) return out;
  size_t end = src.source->find('\n', start);
  std::string line = src.source->substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::string caret;
  for (int c = 1; c < loc.col && size_t(c - 1) < line.size(); ++c)
    caret += line[c - 1] == '\t' ? '\t' : ' ';
  out += "\n    " + line + "\n    " + caret + "^";
  return out;
}

Error diag(const Template& t, Loc loc, const std::string& message) {
  if (loc.file > 0 && size_t(loc.file) < t.files.size())
    return diag(SourceRef{t.files[loc.file].path, t.files[loc.file].text.get()}, loc, message);
  return diag(SourceRef{t.path, t.source.get()}, loc, message);
}

std::string file_of(const Template& t, Loc loc) {
  return loc.file > 0 && size_t(loc.file) < t.files.size() ? t.files[loc.file].path : t.path;
}

}  // namespace arch::dsl

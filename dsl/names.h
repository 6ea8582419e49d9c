// Names the language knows besides the template's own: compile-time
// builtins, and "did you mean" suggestions for misspellings.
#pragma once

#include <string>
#include <vector>

namespace arch::dsl {

bool is_builtin(const std::string& name);
const std::vector<std::string>& builtin_names();

// " (did you mean 'rms_norm'?)" for the closest known name, or "".
std::string did_you_mean(const std::string& name, const std::vector<std::string>& known);

// The same, over names from several places, each offered in turn.
class Suggestion {
 public:
  explicit Suggestion(const std::string& name);
  void consider(const std::string& known);
  std::string text() const;  // " (did you mean '...'?)" or ""

 private:
  const std::string& name_;
  std::string best_;
  size_t best_d_;
};

}  // namespace arch::dsl

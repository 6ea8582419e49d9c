#include "dsl/names.h"

#include <algorithm>

namespace arch::dsl {

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = {"exists", "len", "sqrt", "log", "int", "float", "min", "max", "default", "error", "contains", "str"};
  return names;
}

bool is_builtin(const std::string& name) {
  const auto& b = builtin_names();
  return std::find(b.begin(), b.end(), name) != b.end();
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  std::string best;
  size_t best_d = std::max<size_t>(2, name.size() / 3) + 1;
  for (const auto& k : known) {
    if (k == "_") continue;  // the run-time dim, never what a misspelling meant
    size_t d = edit_distance(name, k);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

}  // namespace arch::dsl

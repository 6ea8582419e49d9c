#include "dsl/names.h"

#include <algorithm>

namespace arch::dsl {

const std::vector<std::string>& builtin_names() {
  static const std::vector<std::string> names = {"exists", "len", "sqrt", "log", "int", "float", "min", "max", "default", "error", "contains", "str", "is_list"};
  return names;
}

bool is_builtin(const std::string& name) {
  const auto& b = builtin_names();
  return std::find(b.begin(), b.end(), name) != b.end();
}

namespace {
// Levenshtein distance, or `bound` once it is sure to be at least that: a
// suggestion only needs the distances under the best so far, and a
// template with many misspellings asks for one per name in scope each
// (no allocation for names up to kShort characters).
constexpr size_t kShort = 64;

size_t edit_distance(const std::string& a, const std::string& b, size_t bound) {
  const size_t gap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
  if (gap >= bound) return bound;
  size_t small[2][kShort + 1];
  std::vector<size_t> large;
  size_t *prev = small[0], *cur = small[1];
  if (b.size() > kShort) {
    large.resize(2 * (b.size() + 1));
    prev = large.data();
    cur = prev + b.size() + 1;
  }
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    size_t row_min = cur[0];
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t d = prev[j - 1] + (a[i - 1] != b[j - 1]);
      if (prev[j] + 1 < d) d = prev[j] + 1;
      if (cur[j - 1] + 1 < d) d = cur[j - 1] + 1;
      cur[j] = d;
      if (d < row_min) row_min = d;
    }
    if (row_min >= bound) return bound;  // a row's least never falls
    std::swap(prev, cur);
  }
  return std::min(prev[b.size()], bound);
}
}  // namespace

Suggestion::Suggestion(const std::string& name) : name_(name), best_d_(std::max<size_t>(2, name.size() / 3) + 1) {}

void Suggestion::consider(const std::string& k) {
  if (k == "_") return;  // the run-time dim, never what a misspelling meant
  const size_t d = edit_distance(name_, k, best_d_);
  if (d < best_d_) {
    best_d_ = d;
    best_ = k;
  }
}

std::string Suggestion::text() const { return best_.empty() ? "" : " (did you mean '" + best_ + "'?)"; }

std::string did_you_mean(const std::string& name, const std::vector<std::string>& known) {
  Suggestion s(name);
  for (const auto& k : known) s.consider(k);
  return s.text();
}

}  // namespace arch::dsl

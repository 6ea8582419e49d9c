#include "core/shape.h"

namespace arch {

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i].concrete() ? std::to_string(s[i].n) : s[i].sym == 1 ? "seq" : s[i].sym == 2 ? "ctx" : "_";
  }
  return out + "]";
}

Shape shape_of(const Dims& d) {
  Shape s;
  for (int64_t n : d) s.push_back(Dim::of(n));
  return s;
}

void concretize_into(const Shape& s, int64_t seq, int64_t ctx, Dims& out) {
  out.clear();
  for (const Dim& x : s) out.push_back(x.concrete() ? x.n : x.sym == 1 ? seq : ctx < 0 ? seq : ctx);
}

Dims concretize(const Shape& s, int64_t seq, int64_t ctx) {
  Dims d;
  concretize_into(s, seq, ctx, d);
  return d;
}

bool is_concrete(const Shape& s) {
  for (const Dim& x : s)
    if (!x.concrete()) return false;
  return true;
}

bool has_dyn(const Shape& s) {
  for (const Dim& x : s)
    if (x.sym == 3) return true;
  return false;
}

}  // namespace arch

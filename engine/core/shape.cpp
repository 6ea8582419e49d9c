#include "engine/core/shape.h"

#include <mutex>

namespace arch {

namespace {

struct Symbols {
  std::mutex mu;
  std::vector<std::string> names{"", "seq", "ctx", "_"};
};

Symbols& symbols() {
  static Symbols s;
  return s;
}

}  // namespace

int dim_symbol(std::string_view name) {
  Symbols& s = symbols();
  std::lock_guard<std::mutex> lock(s.mu);
  for (size_t i = 1; i < s.names.size(); ++i)
    if (s.names[i] == name) return int(i);
  s.names.emplace_back(name);
  return int(s.names.size()) - 1;
}

std::string dim_symbol_name(int sym) {
  Symbols& s = symbols();
  std::lock_guard<std::mutex> lock(s.mu);
  return sym > 0 && size_t(sym) < s.names.size() ? s.names[size_t(sym)] : "?";
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += s[i].concrete() ? std::to_string(s[i].n) : dim_symbol_name(s[i].sym);
  }
  return out + "]";
}

Shape shape_of(const Dims& d) {
  Shape s;
  for (int64_t n : d) s.push_back(Dim::of(n));
  return s;
}

void concretize_into(const Shape& s, const DimValues& dims, Dims& out) {
  out.clear();
  for (const Dim& x : s) out.push_back(x.concrete() ? x.n : dims.get(x.sym));
}

Dims concretize(const Shape& s, const DimValues& dims) {
  Dims d;
  concretize_into(s, dims, d);
  return d;
}

Dims concretize(const Shape& s, int64_t seq, int64_t ctx) {
  Dims d;
  for (const Dim& x : s) d.push_back(x.concrete() ? x.n : x.sym == kSeqSym ? seq : ctx < 0 ? seq : ctx);
  return d;
}

bool is_concrete(const Shape& s) {
  for (const Dim& x : s)
    if (!x.concrete()) return false;
  return true;
}

bool has_dyn(const Shape& s) {
  for (const Dim& x : s)
    if (x.sym == kDynSym) return true;
  return false;
}

}  // namespace arch

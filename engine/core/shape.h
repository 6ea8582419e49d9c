// Shapes whose dims are concrete after instantiation except the run-time
// ones, which stay symbolic until a call: `seq` (the step's token count),
// `ctx` (the positions a KV cache holds after the step), `_` (known only
// from a call's inputs, worked out per call by the ops' shape rules), and
// any a template's graph inputs name (`frames`, `src`, `height`), each
// bound at a call to the size an input brings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/tensor.h"

namespace arch {

// Run-time dims by name, interned process-wide: `seq` is 1, `ctx` 2, `_` 3,
// named ones from 4 on in the order first met (never persisted).
constexpr int kSeqSym = 1, kCtxSym = 2, kDynSym = 3;
int dim_symbol(std::string_view name);
std::string dim_symbol_name(int sym);

struct Dim {
  int64_t n = 0;    // the size when concrete
  int sym = 0;      // 0: concrete; else a run-time dim (dim_symbol)

  static Dim of(int64_t n) { return {n, 0}; }
  static Dim seq() { return {0, kSeqSym}; }
  static Dim ctx() { return {0, kCtxSym}; }
  static Dim dyn() { return {0, kDynSym}; }
  static Dim named(int sym) { return {0, sym}; }
  bool concrete() const { return sym == 0; }
  bool is_named() const { return sym > kDynSym; }
  bool operator==(const Dim& o) const { return sym == o.sym && (sym != 0 || n == o.n); }
  bool operator!=(const Dim& o) const { return !(*this == o); }
};

using Shape = std::vector<Dim>;

// A call's sizes of the run-time dims, by symbol (index 0 unused; -1: not
// bound at this call).
struct DimValues {
  std::vector<int64_t> by_sym;
  DimValues() = default;
  DimValues(int64_t seq, int64_t ctx) : by_sym{0, seq, ctx < 0 ? seq : ctx, -1} {}
  int64_t get(int sym) const { return size_t(sym) < by_sym.size() ? by_sym[size_t(sym)] : -1; }
  void set(int sym, int64_t n) {
    if (by_sym.size() <= size_t(sym)) by_sym.resize(size_t(sym) + 1, -1);
    by_sym[size_t(sym)] = n;
  }
};

std::string shape_str(const Shape& s);          // "[seq, 64]", "[src, 8, 64]"
Shape shape_of(const Dims& d);                  // all concrete
// Replace `seq` and `ctx` by their values at a call (ctx < 0: ctx = seq).
Dims concretize(const Shape& s, int64_t seq, int64_t ctx = -1);
// Every run-time dim by its value at a call (an unbound one, and `_`, as -1).
Dims concretize(const Shape& s, const DimValues& dims);
// The same written into `out`, reusing its storage.
void concretize_into(const Shape& s, const DimValues& dims, Dims& out);
bool is_concrete(const Shape& s);
bool has_dyn(const Shape& s);  // any `_` dim: the shape is worked out per call

}  // namespace arch

// Shapes whose dims are concrete after instantiation except the run-time
// ones (the sequence length of a step), which stay symbolic until a call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace arch {

struct Dim {
  int64_t n = 0;    // the size when concrete
  int sym = 0;      // 0: concrete; 1: `seq`, the step's token count;
                    // 2: `ctx`, the positions a KV cache holds after the step;
                    // 3: `_`, known only from a call's inputs (an image's height)

  static Dim of(int64_t n) { return {n, 0}; }
  static Dim seq() { return {0, 1}; }
  static Dim ctx() { return {0, 2}; }
  static Dim dyn() { return {0, 3}; }
  bool concrete() const { return sym == 0; }
  bool operator==(const Dim& o) const { return sym == o.sym && (sym != 0 || n == o.n); }
  bool operator!=(const Dim& o) const { return !(*this == o); }
};

using Shape = std::vector<Dim>;

std::string shape_str(const Shape& s);          // "[seq, 64]"
Shape shape_of(const Dims& d);                  // all concrete
// Replace `seq` and `ctx` by their values at a call (ctx < 0: ctx = seq).
Dims concretize(const Shape& s, int64_t seq, int64_t ctx = -1);
// The same written into `out`, reusing its storage.
void concretize_into(const Shape& s, int64_t seq, int64_t ctx, Dims& out);
bool is_concrete(const Shape& s);
bool has_dyn(const Shape& s);  // any `_` dim: the shape is worked out per call

}  // namespace arch

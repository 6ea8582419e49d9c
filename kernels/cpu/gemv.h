// y[m, n] = sum_k x[m, k] * w[n, k]: a few rows of activations against a
// slice [n0, n1) of a weight matrix stored [N, K] in F32, BF16 or F16,
// widened in registers (gemv_hwy.cpp). Callers split N across threads.
#pragma once

#include <cstdint>

#include "engine/dtype.h"

namespace arch {

struct GemvArgs {
  const float* x;  // [M, ldx]
  int64_t M, ldx;
  const void* w;   // [N, K]
  DType w_type;
  int64_t K, n0, n1;
  float* y;        // [M, ldy]; columns n0..n1 written
  int64_t ldy;
};

void gemv(const GemvArgs& a);

}  // namespace arch

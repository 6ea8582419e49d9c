// y[m, n] = sum_k x[m, k] * w[n, k]: a few rows of activations against a
// slice [n0, n1) of a weight matrix stored [N, K] in F32, BF16 or F16,
// widened in registers (gemv_hwy.cpp). Callers split N across threads.
#pragma once

#include <cstdint>
#include <type_traits>

#include "engine/core/dtype.h"

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

// The kernels take up to 4 rows of activations at once, the count a
// template argument: run(std::integral_constant<int, MR>{}) for mr 1..4.
template <typename Run>
inline void with_rows(int64_t mr, Run&& run) {
  switch (mr) {
    case 4: return run(std::integral_constant<int, 4>{});
    case 3: return run(std::integral_constant<int, 3>{});
    case 2: return run(std::integral_constant<int, 2>{});
    default: return run(std::integral_constant<int, 1>{});
  }
}

// BF16 weights on AVX-512 BF16 (gemv_bf16_avx512.cpp): x given as its
// two-term bf16 split (split_bf16; lo may be null: hi, the rounding,
// only), rows [n0, n1) of w [N, K].
bool has_avx512_bf16_dot();
void split_bf16(const float* x, int64_t n, uint16_t* hi, uint16_t* lo);
void gemv_bf16_split(const uint16_t* hi, const uint16_t* lo, int64_t M, int64_t ldx, const uint16_t* w, int64_t K,
                     int64_t n0, int64_t n1, float* y, int64_t ldy);
// The same on BF16x64 weights (64-row tiles, kernels/cpu/tiles.h),
// lo required; n0 a multiple of 64.
void gemv_bf16x64_split(const uint16_t* hi, const uint16_t* lo, int64_t M, int64_t ldx, const uint8_t* w, int64_t K,
                        int64_t n0, int64_t n1, float* y, int64_t ldy);

}  // namespace arch

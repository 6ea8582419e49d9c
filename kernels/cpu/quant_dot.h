// Integer dot products for block-quantized weights (engine/core/quant.h): the
// activations are quantized per block of 32 to int8 with an f32 scale (as
// llama.cpp's q8_0 does), each block's dot product is exact in int32, and
// the two scales are applied per block. On AVX-512 VNNI one vpdpbusd takes
// 64 unsigned weight bytes times 64 signed activation bytes; on AVX2
// vpmaddubsw and vpmaddwd take 32; elsewhere a plain loop computes the same
// sums.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/dtype.h"
#include "kernels/cpu/tiles.h"

namespace arch {

// x quantized: q per value, and per block its scale and scale * sum(q) (for
// the weights' offset: q8 stores q + 128, q4 q + 8).
// For Q4_0 weights the values go in the weights' order: within each whole
// 128 values, blocks 0, 2, 1, 3 (one 64-byte load of q4 weights splits
// into its low nibbles, blocks 0 and 2, and high nibbles, blocks 1 and 3).
struct QuantizedActs {
  int64_t M = 0, K = 0;
  bool q4_order = false;
  std::vector<int8_t> q;        // [M, K]
  std::vector<float> scale;     // [M, K / 32]
  std::vector<float> scale_sum; // [M, K / 32]
  std::vector<int32_t> sum;     // [M, K / 32]: sum(q) of each block

  // q of value k of row m, whatever the order.
  int8_t at(int64_t m, int64_t k) const;
};

bool has_avx512_vnni();

void quantize_acts(const float* x, int64_t M, int64_t ldx, int64_t K, QuantizedActs& out, DType for_weights);
// quantize_acts in two steps, for a caller that shares the rows out on
// its own threads: the buffers sized (one thread), then rows [m0, m1).
void prepare_acts(int64_t M, int64_t K, QuantizedActs& out, DType for_weights);
void quantize_act_rows(const float* x, int64_t ldx, int64_t m0, int64_t m1, QuantizedActs& out);

// y[m, n] = sum_k x[m, k] * w[n, k] for n in [n0, n1); w rows in `wt`'s layout.
void quant_gemv(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y, int64_t ldy);

// The same on AVX2 (quant_dot_avx2.cpp): what CPUs without AVX-512 VNNI
// run on rows (MoE experts). Activations in natural order (q4_order false).
void quant_gemv_avx2(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                     int64_t ldy);
// One block of 32 activations quantized on AVX2: q, its scale, scale *
// sum(q) and sum(q), the same values as the plain loop gives.
void quantize_block_avx2(const float* v, int8_t* q, float& scale, float& scale_sum, int32_t& block_sum);

// The same with plain loops: what CPUs without AVX2 run (and the tests hold
// the vector paths to).
void quant_gemv_portable(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                         int64_t ldy);

// One row of w as bf16 (the prompt path feeds slabs of these to oneDNN);
// the k-quants too (dequantize_kquant_row_bf16).
void dequantize_row_bf16(DType wt, const uint8_t* row, int64_t K, uint16_t* out);

// The same for weights with 16 rows interleaved (Q8_0x16 / Q4_0x16,
// kernels/cpu/tiles.h), w [N, K]: y columns [n0, n1), n0 a multiple
// of 16. Each 64-byte load holds 4 values of 16 rows, so a vpdpbusd against
// 4 activation bytes broadcast adds to the 16 rows' sums at once.
void interleaved_gemv(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy);
void interleaved_gemv_portable(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                               int64_t ldy);
// The same on AVX2 without VNNI (quant_interleaved_avx2.cpp), for decode
// and prompts alike; activations in natural order.
void interleaved_gemv_avx2(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                           int64_t ldy);

// The same for many rows of activations (prompts): each weight vector
// loaded serves several rows (quant_interleaved_gemm.cpp).
void interleaved_gemm(const QuantizedActs& a, const uint8_t* w, Tiles wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy);

}  // namespace arch

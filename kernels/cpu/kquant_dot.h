// Integer dot products for llama.cpp's k-quant weights (Q4_K, Q5_K, Q6_K,
// engine/core/kquant.h), read in their own rows of 256-value super-blocks.
//
// Each activation row is quantized per 256 values to int8 with one f32
// scale da (its largest |x| maps to 127), and the sums of its q per 16
// values kept. A super-block's dot product is then integers up to its two
// f32 factors:
//   Q4_K / Q5_K: d·da·Σ_j sc_j·Σ_{i∈j} q_i·a_i − dmin·Σ_j m_j·(da·Σ_{i∈j} a_i)
//                (j the eight 32-value sub-blocks; q unsigned, 4 or 5 bits);
//   Q6_K:        d·da·Σ_k sc_k·(Σ_{i∈k} q_i·a_i − 32·Σ_{i∈k} a_i)
//                (k the sixteen 16-value groups; q unsigned 6 bits).
// The unsigned q times the signed a is what vpmaddubsw takes (pairs summed
// to int16, far from saturating: at most 2·63·127); the sub-block's scale
// then multiplies those in vpdpwssd (AVX-512 VNNI) or vpmaddwd (AVX2), so
// the scales cost no float work per sub-block. The weights' offsets (Q6_K's
// 32, the mins) come off through the activations' sums.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/core/dtype.h"

namespace arch {

// x quantized for k-quant weights. With `paired` (Q4_K / Q5_K on AVX-512
// VNNI) the 32-value blocks 1 and 2 of every 128 values trade places, so
// that one 64-byte load of the weights' nibbles splits into two vectors
// that meet the activations in order (low nibbles: sub-blocks 0 and 2;
// high ones: 1 and 3). sum16 and dsum32 stay in natural order.
struct KQuantActs {
  int64_t M = 0, K = 0;
  bool paired = false;
  std::vector<int8_t> q;        // [M, K]
  std::vector<float> d;         // [M, K / 256]: the scale da
  std::vector<int16_t> sum16;   // [M, K / 16]: Σ q of each 16 values
  std::vector<float> dsum32;    // [M, K / 32]: da · Σ q of each 32 values

  // q of value k of row m, whatever the order.
  int8_t at(int64_t m, int64_t k) const;
};

// Activations [M, K] (row stride ldx, K a multiple of 256) for weights of
// type `wt`, in the order this CPU's kernel (kquant_gemv) reads; `natural`
// asks for natural order whatever the CPU (what the AVX2 and portable
// kernels read; the portable one reads either).
void quantize_kquant_acts(const float* x, int64_t M, int64_t ldx, int64_t K, DType wt, KQuantActs& out,
                          bool natural = false);

// y[m, n] = Σ_k x[m, k] · w[n, k] for weight rows [n0, n1) of w [N, K]
// (rows of type wt): AVX-512 VNNI, else AVX2, else plain loops.
void kquant_gemv(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y, int64_t ldy);
// Each path by name (the tests hold them to one another): VNNI needs
// `paired` as quantize_kquant_acts gives it on VNNI; AVX2 natural order.
void kquant_gemv_vnni(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy);
void kquant_gemv_avx2(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                      int64_t ldy);
void kquant_gemv_portable(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                          int64_t ldy);

// One k-quant row as bf16 (the prompt path's slabs for oneDNN): the same
// values as dequantize_row, rounded to nearest even.
void dequantize_kquant_row_bf16(DType wt, const uint8_t* row, int64_t K, uint16_t* out);

// Q4_K / Q5_K's 12 packed bytes as four words: scales 0-3, scales 4-7,
// mins 0-3, mins 4-7, a byte each. The low 6 bits of bytes 0-7 are the
// first four scales and mins; the last four take their low 4 bits from
// bytes 8-11 (scales the low nibble, mins the high) and their top 2 bits
// from the top of bytes 0-3 (scales) and 4-7 (mins). Word-wide, that is a
// few masks and shifts for all eight at once.
inline void kquant_unpack_scales(const uint8_t* packed, uint32_t out[4]) {
  uint32_t u0, u1, u2;
  std::memcpy(&u0, packed, 4);
  std::memcpy(&u1, packed + 4, 4);
  std::memcpy(&u2, packed + 8, 4);
  out[0] = u0 & 0x3F3F3F3Fu;
  out[1] = (u2 & 0x0F0F0F0Fu) | ((u0 >> 6 & 0x03030303u) << 4);
  out[2] = u1 & 0x3F3F3F3Fu;
  out[3] = (u2 >> 4 & 0x0F0F0F0Fu) | ((u1 >> 6 & 0x03030303u) << 4);
}

}  // namespace arch

#include "engine/core/kquant.h"

#include <cstring>

namespace arch {

namespace {

// Q4_K and Q5_K: each 64 values take 32 bytes of q, low nibbles first; Q5_K
// adds bit 2i (low nibbles) and 2i+1 (high) of qh for the i-th 64 values.
void dequantize_q45k(const uint8_t* b, bool five, float* y) {
  const float d = f16_at(b), dmin = f16_at(b + 2);
  const uint8_t* scales = b + 4;
  const uint8_t* qh = b + 16;
  const uint8_t* q = b + (five ? 48 : 16);
  for (int i = 0; i < 4; ++i, q += 32, y += 64) {
    uint8_t sc0, m0, sc1, m1;
    kquant_scale_min(2 * i, scales, sc0, m0);
    kquant_scale_min(2 * i + 1, scales, sc1, m1);
    const float d0 = d * sc0, min0 = dmin * m0, d1 = d * sc1, min1 = dmin * m1;
    for (int l = 0; l < 32; ++l) {
      const int high0 = five && (qh[l] >> (2 * i) & 1) ? 16 : 0;
      const int high1 = five && (qh[l] >> (2 * i + 1) & 1) ? 16 : 0;
      y[l] = d0 * float((q[l] & 0x0F) + high0) - min0;
      y[l + 32] = d1 * float((q[l] >> 4) + high1) - min1;
    }
  }
}

// Q6_K: each 128 values take 64 bytes of low nibbles and 32 of high bit
// pairs; value l + 32j (j = 0..3) of the 128 has scale (l / 16) + 2j.
void dequantize_q6k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
  const float d = f16_at(b + 208);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, sc += 8, y += 128)
    for (int l = 0; l < 32; ++l) {
      const int s = l / 16;
      const int q0 = ((ql[l] & 0x0F) | ((qh[l] >> 0 & 3) << 4)) - 32;
      const int q1 = ((ql[l + 32] & 0x0F) | ((qh[l] >> 2 & 3) << 4)) - 32;
      const int q2 = ((ql[l] >> 4) | ((qh[l] >> 4 & 3) << 4)) - 32;
      const int q3 = ((ql[l + 32] >> 4) | ((qh[l] >> 6 & 3) << 4)) - 32;
      y[l] = d * float(sc[s]) * float(q0);
      y[l + 32] = d * float(sc[s + 2]) * float(q1);
      y[l + 64] = d * float(sc[s + 4]) * float(q2);
      y[l + 96] = d * float(sc[s + 6]) * float(q3);
    }
}

}  // namespace

bool is_kquant(DType t) { return t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K; }

void dequantize_kquant_row(DType t, const uint8_t* row, int64_t k, float* out) {
  const size_t block = kquant_block_bytes(t);
  for (int64_t b = 0; b < k / kSuperBlock; ++b, row += block, out += kSuperBlock) {
    if (t == DType::Q6_K) dequantize_q6k(row, out);
    else dequantize_q45k(row, t == DType::Q5_K, out);
  }
}

}  // namespace arch

#include "kernels/cpu/quant_dot.h"

#include <immintrin.h>

// GCC 12 sees the reductions' own undefined start values
// (_mm512_reduce_max_ps, _mm512_reduce_add_epi32) as uninitialised once
// inlined: no such read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/kquant_dot.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/gemv.h"

namespace arch {

namespace {

constexpr int64_t B = kQuantBlock;
constexpr int64_t kPrefetchRows = 4;

float scale_at(const uint8_t* row, DType wt, int64_t K, int64_t b) {
  uint16_t bits;
  std::memcpy(&bits, row + quant_scales_offset(wt, K) + 2 * b, 2);
  return f16_to_f32(bits);
}

int offset_of(DType wt) { return wt == DType::Q8_0 ? 128 : 8; }

// Σ_b dw_b * dx_b * sum(q_b): the weights' offset times this is subtracted.
float offset_term(const uint8_t* row, DType wt, const float* scale_sum, int64_t K) {
  float s = 0;
  for (int64_t b = 0; b < K / B; ++b) s += scale_at(row, wt, K, b) * scale_sum[b];
  return s * float(offset_of(wt));
}

uint8_t weight_at(const uint8_t* row, DType wt, int64_t k) {
  if (wt == DType::Q8_0) return row[k];
  uint8_t byte = row[(k / 64) * 32 + k % 32];
  return k % 64 < 32 ? byte & 0x0F : byte >> 4;
}

}  // namespace

void quant_gemv_portable(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                         int64_t ldy) {
  const int64_t K = a.K;
  const size_t row_bytes = quant_row_bytes(wt, K);
  for (int64_t n = n0; n < n1; ++n) {
    const uint8_t* row = w + size_t(n) * row_bytes;
    for (int64_t m = 0; m < a.M; ++m) {
      float total = 0;
      for (int64_t b = 0; b < K / B; ++b) {
        int32_t dot = 0;
        for (int64_t i = b * B; i < (b + 1) * B; ++i) dot += int32_t(weight_at(row, wt, i)) * a.at(m, i);
        total += scale_at(row, wt, K, b) * a.scale[size_t(m * (K / B) + b)] * float(dot);
      }
      y[m * ldy + n] = total - offset_term(row, wt, a.scale_sum.data() + m * (K / B), K);
    }
  }
}

namespace {

#define ARCH_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,f16c,fma")))

// 64 weight values (two blocks) as unsigned bytes.
ARCH_VNNI inline __m512i load_weights(const uint8_t* row, DType wt, int64_t k, int64_t K) {
  if (wt == DType::Q8_0) {
    if (k + 64 <= K) return _mm512_loadu_si512(row + k);
    return _mm512_maskz_loadu_epi8(0xFFFFFFFFull, row + k);  // one block left
  }
  __m256i packed = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + k / 2));
  __m256i lo = _mm256_and_si256(packed, _mm256_set1_epi8(0x0F));
  __m256i hi = _mm256_and_si256(_mm256_srli_epi16(packed, 4), _mm256_set1_epi8(0x0F));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// MR rows of activations against one weight row. Per group of 16 blocks
// the products of the two scales are formed once (dw * dx, 16 lanes); each
// pair of blocks then costs its dot product, one permute spreading the two
// products over the 8 lanes each block's dot lands in, a conversion and an
// FMA. The weights' offset is one more FMA per 16 blocks.
template <int MR>
ARCH_VNNI void row_vnni(const QuantizedActs& a, int64_t m0, const uint8_t* row, DType wt, float* y, int64_t ldy) {
  const int64_t K = a.K, blocks = K / B;
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(row + quant_scales_offset(wt, K));
  __m512 acc[MR], off[MR];
  for (int m = 0; m < MR; ++m) acc[m] = off[m] = _mm512_setzero_ps();
  // Lane j of a pair's dot product belongs to block j / 8 of the pair.
  const __m512i pair_lane = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  for (int64_t b16 = 0; b16 < blocks; b16 += 16) {
    const int64_t n_scales = std::min<int64_t>(16, blocks - b16);
    const __mmask16 live = __mmask16((1u << n_scales) - 1);
    const __m512 dw16 = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(live, scales + b16));
    __m512 s16[MR];
    for (int m = 0; m < MR; ++m) {
      const int64_t at = (m0 + m) * blocks + b16;
      s16[m] = _mm512_mul_ps(dw16, _mm512_maskz_loadu_ps(live, a.scale.data() + at));
      off[m] = _mm512_fmadd_ps(dw16, _mm512_maskz_loadu_ps(live, a.scale_sum.data() + at), off[m]);
    }
    int64_t b = b16;
    if (a.q4_order) {  // whole 128-value chunks: one load, two dot products
      const __m512i low_nibbles = _mm512_set1_epi8(0x0F);
      const __m512i lanes_02 = _mm512_set_epi32(2, 2, 2, 2, 2, 2, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0);
      const __m512i lanes_13 = _mm512_set_epi32(3, 3, 3, 3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1);
      for (; b + 4 <= b16 + n_scales && (b + 4) * B <= K / 128 * 128; b += 4) {
        const int64_t k = b * B;
        const __m512i v = _mm512_loadu_si512(row + k / 2);
        const __m512i lo = _mm512_and_si512(v, low_nibbles);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low_nibbles);
        const __m512i rel = _mm512_set1_epi32(int(b - b16));
        const __m512i idx_lo = _mm512_add_epi32(lanes_02, rel), idx_hi = _mm512_add_epi32(lanes_13, rel);
        for (int m = 0; m < MR; ++m) {
          const int8_t* q = a.q.data() + (m0 + m) * K + k;
          const __m512i dot_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, _mm512_loadu_si512(q));
          const __m512i dot_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, _mm512_loadu_si512(q + 64));
          acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_lo), _mm512_permutexvar_ps(idx_lo, s16[m]), acc[m]);
          acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_hi), _mm512_permutexvar_ps(idx_hi, s16[m]), acc[m]);
        }
      }
    }
    __m512i lane = _mm512_add_epi32(pair_lane, _mm512_set1_epi32(int(b - b16)));
    for (; b < b16 + n_scales; b += 2) {
      const int64_t k = b * B;
      const __m512i u = load_weights(row, wt, k, K);
      for (int m = 0; m < MR; ++m) {
        const int8_t* q = a.q.data() + (m0 + m) * K + k;
        const __m512i qv = k + 64 <= K ? _mm512_loadu_si512(q) : _mm512_maskz_loadu_epi8(0xFFFFFFFFull, q);
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, qv);
        acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(lane, s16[m]), acc[m]);
      }
      lane = _mm512_add_epi32(lane, _mm512_set1_epi32(2));
    }
  }
  const __m512 offset = _mm512_set1_ps(float(offset_of(wt)));
  for (int m = 0; m < MR; ++m) y[(m0 + m) * ldy] = _mm512_reduce_add_ps(_mm512_fnmadd_ps(offset, off[m], acc[m]));
}

ARCH_VNNI void rows_vnni(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                         int64_t ldy) {
  const size_t row_bytes = quant_row_bytes(wt, a.K);
  for (int64_t m = 0; m < a.M; m += 4) {
    const int64_t mr = std::min<int64_t>(4, a.M - m);
    for (int64_t n = n0; n < n1; ++n) {
      const uint8_t* row = w + size_t(n) * row_bytes;
      // Ask for rows a few ahead: each row is short (a few cache lines), so
      // the hardware prefetcher has little run-up within one.
      const uint8_t* ahead = row + kPrefetchRows * row_bytes;
      if (n + kPrefetchRows < n1)
        for (size_t line = 0; line < row_bytes; line += 64) _mm_prefetch(reinterpret_cast<const char*>(ahead + line), _MM_HINT_T0);
      with_rows(mr, [&](auto MR) { row_vnni<MR>(a, m, row, wt, y + n, ldy); });
    }
  }
}

#define ARCH_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,f16c")))

ARCH_BF16 void row_to_bf16_avx512(DType wt, const uint8_t* row, int64_t K, uint16_t* out) {
  const uint16_t* scales = reinterpret_cast<const uint16_t*>(row + quant_scales_offset(wt, K));
  const __m512i offset = _mm512_set1_epi32(wt == DType::Q8_0 ? 128 : 8);
  for (int64_t k = 0; k < K; k += 16) {
    __m128i bytes;
    if (wt == DType::Q8_0) {
      bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + k));
    } else {  // 16 nibbles: low ones for the first half of a 64-group, high ones for the second
      const int64_t group = k / 64, in_group = k % 64;
      __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + group * 32 + in_group % 32));
      bytes = in_group < 32 ? _mm_and_si128(packed, _mm_set1_epi8(0x0F))
                            : _mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F));
    }
    uint16_t bits;
    std::memcpy(&bits, scales + k / B, 2);
    const __m512 d = _mm512_set1_ps(f16_to_f32(bits));
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), offset)), d);
    __m256bh h = _mm512_cvtneps_pbh(v);
    std::memcpy(out + k, &h, 32);
  }
}

// One block of 32 activations to int8: its largest |x| maps to 127 (ties
// to even, as the vector conversion rounds).
void quantize_block(const float* v, int8_t* q, float& scale, float& scale_sum, int32_t& block_sum) {
  float amax = 0;
  for (int64_t i = 0; i < B; ++i) amax = std::max(amax, std::abs(v[i]));
  const float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
  int32_t sum = 0;
  for (int64_t i = 0; i < B; ++i) {
    q[i] = int8_t(std::nearbyint(v[i] * inv));
    sum += q[i];
  }
  scale = d;
  scale_sum = d * float(sum);
  block_sum = sum;
}

ARCH_VNNI void quantize_block_avx512(const float* v, int8_t* q, float& scale, float& scale_sum, int32_t& block_sum) {
  const __m512 v0 = _mm512_loadu_ps(v), v1 = _mm512_loadu_ps(v + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
  const float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
  const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, _mm512_set1_ps(inv)));
  const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, _mm512_set1_ps(inv)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtepi32_epi8(q0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtepi32_epi8(q1));
  scale = d;
  block_sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
  scale_sum = d * float(block_sum);
}

}  // namespace

bool has_avx512_vnni() {
  return cpu_features().avx512_vnni;
}

int8_t QuantizedActs::at(int64_t m, int64_t k) const {
  if (q4_order && k < K / 128 * 128) {
    static const int kPlace[4] = {0, 64, 32, 96};  // where blocks 0..3 of a chunk sit
    k = k / 128 * 128 + kPlace[(k % 128) / B] + k % B;
  }
  return q[size_t(m * K + k)];
}

void prepare_acts(int64_t M, int64_t K, QuantizedActs& out, DType for_weights) {
  const int64_t blocks = K / B;
  out.M = M;
  out.K = K;
  out.q4_order = for_weights == DType::Q4_0 && has_avx512_vnni();  // the VNNI row kernel's order
  out.q.resize(size_t(M * K));
  out.scale.resize(size_t(M * blocks));
  out.scale_sum.resize(size_t(M * blocks));
  out.sum.resize(size_t(M * blocks));
}

void quantize_act_rows(const float* x, int64_t ldx, int64_t m0, int64_t m1, QuantizedActs& out) {
  const int64_t K = out.K, blocks = K / B;
  const bool avx512 = has_avx512_vnni(), avx2 = cpu_features().avx2;
  for (int64_t m = m0; m < m1; ++m) {
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t at = size_t(m * blocks + b);
      int8_t* q = out.q.data() + m * K + b * B;
      if (avx512) quantize_block_avx512(x + m * ldx + b * B, q, out.scale[at], out.scale_sum[at], out.sum[at]);
      else if (avx2) quantize_block_avx2(x + m * ldx + b * B, q, out.scale[at], out.scale_sum[at], out.sum[at]);
      else quantize_block(x + m * ldx + b * B, q, out.scale[at], out.scale_sum[at], out.sum[at]);
    }
    if (out.q4_order)  // swap blocks 1 and 2 of every whole 128-value chunk
      for (int64_t c = 0; c + 128 <= K; c += 128) {
        int8_t* chunk = out.q.data() + m * K + c;
        std::swap_ranges(chunk + B, chunk + 2 * B, chunk + 2 * B);
      }
  }
}

void quantize_acts(const float* x, int64_t M, int64_t ldx, int64_t K, QuantizedActs& out, DType for_weights) {
  prepare_acts(M, K, out, for_weights);
  parallel_for(M, M * K >= (1 << 16), [&](int64_t m) { quantize_act_rows(x, ldx, m, m + 1, out); });
}

void dequantize_row_bf16(DType wt, const uint8_t* row, int64_t K, uint16_t* out) {
  if (is_kquant(wt)) return dequantize_kquant_row_bf16(wt, row, K, out);
  if (has_avx512_bf16_dot()) return row_to_bf16_avx512(wt, row, K, out);
  thread_local std::vector<float> f;
  f.resize(size_t(K));
  dequantize_row(wt, row, K, f.data());
  for (int64_t k = 0; k < K; ++k) out[k] = f32_to_bf16(f[size_t(k)]);
}

void quant_gemv(const QuantizedActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  if (has_avx512_vnni()) rows_vnni(a, w, wt, n0, n1, y, ldy);
  else if (cpu_features().avx2) quant_gemv_avx2(a, w, wt, n0, n1, y, ldy);
  else quant_gemv_portable(a, w, wt, n0, n1, y, ldy);
}

}  // namespace arch

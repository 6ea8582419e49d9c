// The k-quant dot products' common parts: the activations quantized per
// 256 values, the plain loops every vector path is held to (and CPUs
// without AVX2 run), the choice of path, and rows widened to bf16 for the
// prompt path.
#include "kernels/cpu/kquant_dot.h"

#include <immintrin.h>

// GCC 12 sees the AVX-512 conversions' own undefined start values as
// uninitialised once inlined (sixteen_bf16): no such read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/kquant_chunks_avx2.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/quant_dot.h"

namespace arch {

namespace {

constexpr int64_t S = kSuperBlock;

// 256 values to int8 with one scale: the largest |x| maps to 127, values
// rounded to nearest, ties to even (as the vector conversion rounds).
void quantize_superblock(const float* x, int8_t* q, float& d) {
  float amax = 0;
  for (int64_t i = 0; i < S; ++i) amax = std::max(amax, std::abs(x[i]));
  d = amax / 127.0f;
  const float inv = d != 0 ? 1.0f / d : 0.0f;
  for (int64_t i = 0; i < S; ++i) q[i] = int8_t(std::nearbyint(x[i] * inv));
}

#define ARCH_KQ_AVX2 __attribute__((target("avx2,fma,f16c")))

// The same on AVX2, bit for bit.
ARCH_KQ_AVX2 void quantize_superblock_avx2(const float* x, int8_t* q, float& d) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 amax = _mm256_setzero_ps();
  for (int64_t i = 0; i < S; i += 8) amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
  __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
  m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
  d = _mm_cvtss_f32(_mm_max_ss(m4, _mm_movehdup_ps(m4))) / 127.0f;
  const __m256 inv = _mm256_set1_ps(d != 0 ? 1.0f / d : 0.0f);
  for (int64_t i = 0; i < S; i += 32) {
    __m256i n[4];
    for (int k = 0; k < 4; ++k) n[k] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), inv));
    // Packing works within 128-bit halves; the permute puts the 4-byte
    // groups back in order.
    const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(n[0], n[1]), _mm256_packs_epi32(n[2], n[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + i),
                        _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
  }
}

}  // namespace

int8_t KQuantActs::at(int64_t m, int64_t k) const {
  if (paired) {
    static const int kPlace[4] = {0, 64, 32, 96};  // where blocks 0..3 of each 128 sit
    k = k / 128 * 128 + kPlace[(k % 128) / 32] + k % 32;
  }
  return q[size_t(m * K + k)];
}

void quantize_kquant_acts(const float* x, int64_t M, int64_t ldx, int64_t K, DType wt, KQuantActs& out,
                          bool natural) {
  const int64_t blocks = K / S;
  out.M = M;
  out.K = K;
  out.paired = !natural && wt != DType::Q6_K && has_avx512_vnni();  // the VNNI kernel's order
  out.q.resize(size_t(M * K));
  out.d.resize(size_t(M * blocks));
  out.sum16.resize(size_t(M * K / 16));
  out.dsum32.resize(size_t(M * K / 32));
  const bool avx2 = cpu_features().avx2;
  parallel_for(M, M * K >= (1 << 16), [&](int64_t m) {
    for (int64_t b = 0; b < blocks; ++b) {
      int8_t* q = out.q.data() + m * K + b * S;
      float& d = out.d[size_t(m * blocks + b)];
      if (avx2) quantize_superblock_avx2(x + m * ldx + b * S, q, d);
      else quantize_superblock(x + m * ldx + b * S, q, d);
      int16_t* sum16 = out.sum16.data() + (m * K + b * S) / 16;
      for (int g = 0; g < 16; ++g) {
        int s = 0;
        for (int i = 0; i < 16; ++i) s += q[16 * g + i];
        sum16[g] = int16_t(s);
      }
      float* dsum32 = out.dsum32.data() + (m * K + b * S) / 32;
      for (int j = 0; j < 8; ++j) dsum32[j] = d * float(sum16[2 * j] + sum16[2 * j + 1]);
      if (out.paired)
        for (int64_t c = 0; c < S; c += 128) std::swap_ranges(q + c + 32, q + c + 64, q + c + 64);
    }
  });
}

namespace {

// Unsigned q of value i of a super-block.
uint8_t q_of(DType wt, const uint8_t* b, int i) {
  if (wt == DType::Q6_K) {
    const int half = i / 128, l = i % 32, c = i % 128 / 32;  // c: which quarter of the half
    const uint8_t low = b[64 * half + 32 * (c % 2) + l];
    const uint8_t high = b[128 + 32 * half + l] >> (2 * c) & 3;
    return uint8_t((c < 2 ? low & 0x0F : low >> 4) | high << 4);
  }
  const uint8_t* qs = b + (wt == DType::Q5_K ? 48 : 16);
  const int j = i / 32, l = i % 32;
  const uint8_t byte = qs[32 * (j / 2) + l];
  const uint8_t q = j % 2 == 0 ? byte & 0x0F : byte >> 4;
  return wt == DType::Q5_K ? uint8_t(q | (b[16 + l] >> j & 1) << 4) : q;
}

}  // namespace

void kquant_gemv_portable(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y,
                          int64_t ldy) {
  const int64_t K = a.K, blocks = K / S;
  const size_t block_bytes = kquant_block_bytes(wt), row_bytes = size_t(blocks) * block_bytes;
  for (int64_t n = n0; n < n1; ++n)
    for (int64_t m = 0; m < a.M; ++m) {
      float total = 0;
      for (int64_t blk = 0; blk < blocks; ++blk) {
        const uint8_t* b = w + size_t(n) * row_bytes + size_t(blk) * block_bytes;
        const float da = a.d[size_t(m * blocks + blk)];
        const int64_t at = blk * S;
        int32_t dot = 0;
        if (wt == DType::Q6_K) {
          const auto* sc = reinterpret_cast<const int8_t*>(b + 192);
          for (int k = 0; k < 16; ++k) {
            int32_t s = 0;
            for (int i = 16 * k; i < 16 * (k + 1); ++i) s += int32_t(q_of(wt, b, i)) * a.at(m, at + i);
            dot += sc[k] * (s - 32 * a.sum16[size_t((m * K + at) / 16 + k)]);
          }
          total += f16_at(b + 208) * da * float(dot);
          continue;
        }
        uint32_t packed[4];
        kquant_unpack_scales(b + 4, packed);
        const auto* scales = reinterpret_cast<const uint8_t*>(packed);  // 8 scales, then 8 mins
        float mins = 0;
        for (int j = 0; j < 8; ++j) {
          int32_t s = 0;
          for (int i = 32 * j; i < 32 * (j + 1); ++i) s += int32_t(q_of(wt, b, i)) * a.at(m, at + i);
          dot += scales[j] * s;
          mins += float(scales[8 + j]) * a.dsum32[size_t((m * K + at) / 32 + j)];
        }
        total += f16_at(b) * da * float(dot) - f16_at(b + 2) * mins;
      }
      y[m * ldy + n] = total;
    }
}

void kquant_gemv(const KQuantActs& a, const uint8_t* w, DType wt, int64_t n0, int64_t n1, float* y, int64_t ldy) {
  if (has_avx512_vnni()) kquant_gemv_vnni(a, w, wt, n0, n1, y, ldy);
  else if (cpu_features().avx2) kquant_gemv_avx2(a, w, wt, n0, n1, y, ldy);
  else kquant_gemv_portable(a, w, wt, n0, n1, y, ldy);
}

namespace {

#define ARCH_KQ_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma,f16c")))

// 16 unsigned q as bf16: Q6_K (q - 32) · scale, the others q · scale -
// offset. d · sc is exact in f32 (an f16 times a 6- or 8-bit scale), so is
// its product with a 4- or 5-bit q, and each value is rounded once, as
// dequantize_row rounds it (signed zeros and all).
template <DType WT>
ARCH_KQ_BF16 inline void sixteen_bf16(__m128i q, float scale, float offset, uint16_t* out) {
  const __m512i n = _mm512_cvtepu8_epi32(q);
  const __m512 v = WT == DType::Q6_K
                       ? _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(n, _mm512_set1_epi32(32))),
                                       _mm512_set1_ps(scale))
                       : _mm512_fmsub_ps(_mm512_cvtepi32_ps(n), _mm512_set1_ps(scale), _mm512_set1_ps(offset));
  const __m256bh h = _mm512_cvtneps_pbh(v);
  std::memcpy(out, &h, 32);
}

template <DType WT>
ARCH_KQ_BF16 void row_to_bf16(const uint8_t* row, int64_t K, uint16_t* out) {
  constexpr size_t block_bytes = kq_block_bytes<WT>;
  for (int64_t blk = 0; blk < K / S; ++blk, out += S) {
    const uint8_t* b = row + size_t(blk) * block_bytes;
    float scale[16], offset[16];  // per 16 values
    if constexpr (WT == DType::Q6_K) {
      const float d = kq_f16(b + 208);
      for (int k = 0; k < 16; ++k) {
        scale[k] = d * float(int8_t(b[192 + k]));
        offset[k] = 0;  // the 32 comes off the q
      }
    } else {
      const float d = kq_f16(b), dmin = kq_f16(b + 2);
      uint32_t packed[4];
      kquant_unpack_scales(b + 4, packed);
      const auto* sm = reinterpret_cast<const uint8_t*>(packed);
      for (int k = 0; k < 16; ++k) {
        scale[k] = d * float(sm[k / 2]);
        offset[k] = dmin * float(sm[8 + k / 2]);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i q = kquant_chunk<WT>(b, j);
      sixteen_bf16<WT>(_mm256_castsi256_si128(q), scale[2 * j], offset[2 * j], out + 32 * j);
      sixteen_bf16<WT>(_mm256_extracti128_si256(q, 1), scale[2 * j + 1], offset[2 * j + 1], out + 32 * j + 16);
    }
  }
}

}  // namespace

void dequantize_kquant_row_bf16(DType wt, const uint8_t* row, int64_t K, uint16_t* out) {
  if (has_avx512_bf16_dot()) {
    if (wt == DType::Q4_K) return row_to_bf16<DType::Q4_K>(row, K, out);
    if (wt == DType::Q5_K) return row_to_bf16<DType::Q5_K>(row, K, out);
    return row_to_bf16<DType::Q6_K>(row, K, out);
  }
  thread_local std::vector<float> f;
  f.resize(size_t(K));
  dequantize_row(wt, row, K, f.data());
  for (int64_t k = 0; k < K; ++k) out[k] = f32_to_bf16(f[size_t(k)]);
}

}  // namespace arch

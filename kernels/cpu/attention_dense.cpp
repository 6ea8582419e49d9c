// Long unmasked attention (an encoder over 1500 audio frames, a ViT's
// patches, T5's encoder with its position bias): per query head, the whole
// score matrix from one matrix product (the cpu matmul: oneDNN), the bias
// added and each row exponentiated in place (its max subtracted), the
// values from a second product, divided by the rows' sums after (one pass
// fewer over the scores than a softmax); the heads are read and written
// where they lie ([seq, heads, head_dim], strided products), the scale
// applied by the first. The flash
// kernel (attention_hwy.cpp) streams the same sums in small blocks; where
// nothing is masked and both lengths are long, two large products run
// nearer the machine's GEMM rate. Scores past 64 MiB a head are made a band
// of query rows at a time.
#include <algorithm>
#include <omp.h>

#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

// 64 MiB of scores at most: a band of query rows at a time where all of
// them would be more (SD3's 4,096 image queries over 4,173 keys).
constexpr int64_t kScoreFloats = int64_t(1) << 24;

bool attention_by_matmul_fits(int64_t S, int64_t T, bool causal, int64_t window, float softcap, DType kv) {
  return !causal && window == 0 && softcap == 0.0f && kv == DType::F32 && S >= 128 && T >= 128 &&
         T * 128 <= kScoreFloats;  // bands of 128 query rows at least
}

Status attention_by_matmul(const Tensor& Q, const Tensor& K, const Tensor& V, const float* bias, float scale,
                           Tensor& out, const std::string& where) {
  const int64_t S = Q.dim(0), H = Q.dim(1), D = Q.dim(2), T = K.dim(0), KH = K.dim(1), Dv = V.dim(2);
  const int64_t group = H / KH;
  // Scratch kept across calls (every element written before it is read):
  // no 9 MB zeroed per layer.
  const int64_t band = std::min(S, kScoreFloats / T);
  thread_local std::vector<float> scores_buffer, inv;
  scores_buffer.resize(size_t(band * T));
  inv.resize(size_t(band));
  // Plain pointers: the worker threads would see thread_locals of their own.
  float* scores = scores_buffer.data();
  float* inv_sum = inv.data();
  for (int64_t h = 0; h < H; ++h) {
    const int64_t g = h / group;
    for (int64_t s0 = 0; s0 < S; s0 += band) {
      const int64_t rows = std::min(band, S - s0);
      // scores = scale * q[rows, h, :] @ k[:, g, :]^T, read in place
      ARCH_TRY_STATUS(matmul_strided_f32(rows, D, T, Q.f32() + s0 * H * D + h * D, H * D, K.f32() + g * D, KH * D, true,
                                         scores, T, scale, where));
      // p = exp(scores + bias - max), unnormalised; inv = 1 / sum p
      exp_rows(scores, rows, T, bias ? bias + (h * S + s0) * T : nullptr, inv_sum);
      // out[rows, h, :] = (p @ v[:, g, :]) / sum p, written in place
      float* o = out.f32() + s0 * H * Dv + h * Dv;
      ARCH_TRY_STATUS(matmul_strided_f32(rows, T, Dv, scores, T, V.f32() + g * Dv, KH * Dv, false, o, H * Dv,
                                         1.0f, where));
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t e = 0; e < Dv; ++e) o[r * H * Dv + e] *= inv_sum[r];
    }
  }
  return {};
}

}  // namespace arch

// Long unmasked attention (an encoder over 1500 audio frames, a ViT's
// patches, T5's encoder with its position bias): per query head, the whole
// score matrix from one matrix product (the cpu matmul: oneDNN), the bias
// added, the cpu softmax over each row, and the values from a second
// product. The flash kernel (attention_hwy.cpp) streams the same sums in
// small blocks; where nothing is masked and both lengths are long, two
// large products run nearer the machine's GEMM rate. The scale is folded
// into the queries as they are gathered.
#include <omp.h>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

bool attention_by_matmul_fits(int64_t S, int64_t T, int64_t H, int64_t KH, bool causal, int64_t window, float softcap,
                              DType kv) {
  (void)H, (void)KH;  // GQA too: each query head reads its kv head's copy
  return !causal && window == 0 && softcap == 0.0f && kv == DType::F32 && S >= 128 && T >= 128 &&
         S * T <= (int64_t(1) << 24);  // 64 MiB of scores per head at most
}

Status attention_by_matmul(const Tensor& Q, const Tensor& K, const Tensor& V, const float* bias, float scale,
                           Tensor& out, const Kernel& softmax, const std::string& where) {
  const int64_t S = Q.dim(0), H = Q.dim(1), D = Q.dim(2), T = K.dim(0), KH = K.dim(1), Dv = V.dim(2);
  const int64_t group = H / KH;
  Tensor q = Tensor::zeros(DType::F32, {S, D}), k = Tensor::zeros(DType::F32, {T, D});
  Tensor vt = Tensor::zeros(DType::F32, {Dv, T}), scores = Tensor::zeros(DType::F32, {S, T});
  Tensor probs = Tensor::zeros(DType::F32, {S, T}), o = Tensor::zeros(DType::F32, {S, Dv});
  const float *qs = Q.f32(), *ks = K.f32(), *vs = V.f32();
  static const Attrs none = Attrs::object();
  for (int64_t g = 0; g < KH; ++g) {
    float *kd = k.f32(), *vd = vt.f32();
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < T; ++j) {
      for (int64_t e = 0; e < D; ++e) kd[j * D + e] = ks[(j * KH + g) * D + e];
      for (int64_t e = 0; e < Dv; ++e) vd[e * T + j] = vs[(j * KH + g) * Dv + e];
    }
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      float* qd = q.f32();
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < S; ++r)
        for (int64_t e = 0; e < D; ++e) qd[r * D + e] = qs[(r * H + h) * D + e] * scale;
      ARCH_TRY_STATUS(matmul_rows(q, k, scores, where));  // [S, T] = q k^T
      if (bias) {
        float* sc = scores.f32();
        const float* b = bias + h * S * T;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < S * T; ++i) sc[i] += b[i];
      }
      std::vector<Tensor> in{scores}, outs{probs};
      std::unique_ptr<OpState> no_state;
      KernelContext sctx{none, in, outs, no_state, 0, where};
      ARCH_TRY_STATUS(softmax(sctx));
      ARCH_TRY_STATUS(matmul_rows(probs, vt, o, where));  // [S, Dv] = p v
      const float* od = o.f32();
      float* dst = out.f32();
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < S; ++r)
        for (int64_t e = 0; e < Dv; ++e) dst[(r * H + h) * Dv + e] = od[r * Dv + e];
    }
  }
  return {};
}

}  // namespace arch

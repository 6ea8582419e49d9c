// The cpu backend's conv2d, in the layout every op keeps ([C, H, W], no
// reorder between ops): a 1x1 stride-1 convolution is one product,
// out [O, H W] = w [O, C] @ x [C, H W]; any other is unfolded (im2col) into
// rows [C kH kW, H' W'] (one row per input channel and kernel tap, each the
// shifted image, zero outside), then one product w [O, C kH kW] @ rows by
// oneDNN, the output [O, H' W'] as it stands; then the bias. The rows are
// unfolded a band of output rows at a time, so that they never hold more
// than kUnfoldedFloats (a VAE's 128 channels at 1024x1024 would be 4.8 GB
// at once). groups 1 and F32 only; the rest goes to the reference, which
// also words every error.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "engine/core/huge_pages.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// 256 MB of unfolded rows at most: bands of a few dozen output rows at
// 1024x1024, each product still thousands of columns wide.
constexpr int64_t kUnfoldedFloats = int64_t(64) << 20;

Status conv2d_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1) return reference(ctx);
  const Tensor& X = ctx.inputs[0];
  const Tensor& W = ctx.inputs[1];
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2].data;
  if (!X.data || !W.data || X.dtype != DType::F32 || W.dtype != DType::F32 || X.shape.size() != 3 ||
      W.shape.size() != 4 || (has_bias && ctx.inputs[2].dtype != DType::F32))
    return reference(ctx);
  const int64_t stride = attr_int(ctx.attrs, "stride", 1), padding = attr_int(ctx.attrs, "padding", 0);
  const int64_t dilation = attr_int(ctx.attrs, "dilation", 1), groups = attr_int(ctx.attrs, "groups", 1);
  const int64_t C = X.dim(0), H = X.dim(1), Wd = X.dim(2), O = W.dim(0), KH = W.dim(2), KW = W.dim(3);
  if (groups != 1 || W.dim(1) != C || stride < 1 || dilation < 1 || padding < 0) return reference(ctx);
  const int64_t sh = H + 2 * padding - dilation * (KH - 1) - 1, sw = Wd + 2 * padding - dilation * (KW - 1) - 1;
  if (sh < 0 || sw < 0) return reference(ctx);
  const int64_t Ho = sh / stride + 1, Wo = sw / stride + 1, N = Ho * Wo, K = C * KH * KW;
  Tensor& out = ctx.outputs[0];
  if (out.dtype != DType::F32 || out.shape != Dims{O, Ho, Wo} || (has_bias && ctx.inputs[2].shape != Dims{O}))
    return reference(ctx);
  if (KH == 1 && KW == 1 && stride == 1 && padding == 0) {
    // out [O, N] = w [O, C] @ x [C, N]
    ARCH_TRY_STATUS(matmul_strided_f32(O, K, N, W.f32(), K, X.f32(), N, false, out.f32(), N, 1.0f, ctx.where));
  } else {
    // Kept across calls, grown without copying or zeroing (every element
    // is written), on huge pages.
    struct Scratch {
      std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
      size_t capacity = 0;
    };
    thread_local Scratch unfolded;
    const int64_t band = std::clamp<int64_t>(kUnfoldedFloats / std::max<int64_t>(K * Wo, 1), 1, Ho);
    const int64_t Nb = band * Wo;
    if (unfolded.capacity < size_t(K * Nb)) {
      unfolded.data.reset();
      unfolded.data.reset(static_cast<float*>(allocate_buffer(size_t(K * Nb) * sizeof(float))));
      if (!unfolded.data) return kernel_error(ctx, "conv2d", "out of memory for the unfolded input");
      unfolded.capacity = size_t(K * Nb);
    }
    float* u = unfolded.data.get();
    const float* x = X.f32();
    for (int64_t p0 = 0; p0 < Ho; p0 += band) {
      const int64_t rows_here = std::min(band, Ho - p0), n = rows_here * Wo;
      // u[(ci kH + i) kW + j, (p - p0) W' + q] = x[ci, p s - pad + i d, q s - pad + j d]:
      // per output row, the columns [q0, q1) inside the image, zeros around.
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < K; ++r) {
        const int64_t ci = r / (KH * KW), i = r / KW % KH, j = r % KW;
        const int64_t off = j * dilation - padding;  // the input column of output column q: q s + off
        const int64_t q0 = std::clamp<int64_t>(off >= 0 ? 0 : (-off + stride - 1) / stride, 0, Wo);
        const int64_t q1 = std::clamp<int64_t>(Wd - off <= 0 ? 0 : (Wd - off + stride - 1) / stride, q0, Wo);
        float* dst = u + r * n;
        for (int64_t p = p0; p < p0 + rows_here; ++p, dst += Wo) {
          const int64_t y = p * stride - padding + i * dilation;
          if (y < 0 || y >= H) {
            std::fill(dst, dst + Wo, 0.0f);
            continue;
          }
          const float* src = x + (ci * H + y) * Wd + off;
          std::fill(dst, dst + q0, 0.0f);
          if (stride == 1) std::copy(src + q0, src + q1, dst + q0);
          else
            for (int64_t q = q0; q < q1; ++q) dst[q] = src[q * stride];
          std::fill(dst + q1, dst + Wo, 0.0f);
        }
      }
      // out [O, the band's columns] = w [O, K] @ u [K, n]
      ARCH_TRY_STATUS(matmul_strided_f32(O, K, n, W.f32(), K, u, n, false, out.f32() + p0 * Wo, N, 1.0f, ctx.where));
    }
  }
  if (has_bias) {
    const float* b = ctx.inputs[2].f32();
    float* o = out.f32();
#pragma omp parallel for schedule(static)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t t = 0; t < N; ++t) o[oc * N + t] += b[oc];
  }
  return {};
}

}  // namespace

void register_cpu_conv2d(OpTable& t) {
  const Kernel* ref = t.kernel("conv2d", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for conv2d");
  t.add_kernel(
      "conv2d", "cpu", [reference = *ref](KernelContext& ctx) { return conv2d_cpu(ctx, reference); }, nullptr, nullptr,
      /*fills=*/true);
}

}  // namespace arch

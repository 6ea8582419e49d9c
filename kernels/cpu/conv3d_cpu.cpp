// The cpu backend's conv3d, in the layout every op keeps ([C, T, H, W], no
// reorder between ops): a 1x1x1 stride-1 convolution is one product,
// out [O, T H W] = w [O, C] @ x [C, T H W]; any other is unfolded per
// output frame into rows [C kT kH kW, H' W'] (one row per input channel and
// kernel tap: the shifted frame, zeros outside the video and its padding),
// then one product w [O, C kT kH kW] @ rows by oneDNN into that frame of
// the output; then the bias. As conv2d's, the rows are unfolded a band of
// output rows at a time (at most kUnfoldedFloats). F32 only; the rest goes
// to the reference, which also words every error.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "engine/core/huge_pages.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/conv3d.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

constexpr int64_t kUnfoldedFloats = int64_t(64) << 20;

Status conv3d_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1) return reference(ctx);
  const Tensor& X = ctx.inputs[0];
  const Tensor& Wt = ctx.inputs[1];
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2].data;
  if (!X.data || !Wt.data || X.dtype != DType::F32 || Wt.dtype != DType::F32 || (has_bias && ctx.inputs[2].dtype != DType::F32))
    return reference(ctx);
  auto c = conv3d_attrs(ctx.attrs);
  if (!c.ok()) return reference(ctx);
  auto dims = conv3d_dims(X.shape, Wt.shape, has_bias ? &ctx.inputs[2].shape : nullptr, *c);
  Tensor& out = ctx.outputs[0];
  if (!dims.ok() || out.dtype != DType::F32 || out.shape != *dims) return reference(ctx);
  const int64_t C = X.dim(0), T = X.dim(1), H = X.dim(2), Wd = X.dim(3);
  const int64_t O = Wt.dim(0), kT = Wt.dim(2), kH = Wt.dim(3), kW = Wt.dim(4);
  const int64_t To = (*dims)[1], Ho = (*dims)[2], Wo = (*dims)[3], frame_out = Ho * Wo, K = C * kT * kH * kW;
  const int64_t st = c->stride[0], sh = c->stride[1], sw = c->stride[2];
  const int64_t front = c->pad[0], top = c->pad[2], left = c->pad[4];
  const bool pointwise = kT == 1 && kH == 1 && kW == 1 && st == 1 && sh == 1 && sw == 1 &&
                         std::all_of(c->pad, c->pad + 6, [](int64_t p) { return p == 0; });
  if (pointwise) {
    // out [O, N] = w [O, C] @ x [C, N]
    const int64_t N = T * H * Wd;
    ARCH_TRY_STATUS(matmul_strided_f32(O, C, N, Wt.f32(), C, X.f32(), N, false, out.f32(), N, 1.0f, ctx.where));
  } else {
    struct Scratch {
      std::unique_ptr<float, decltype(&std::free)> data{nullptr, &std::free};
      size_t capacity = 0;
    };
    thread_local Scratch unfolded;
    const int64_t band = std::clamp<int64_t>(kUnfoldedFloats / std::max<int64_t>(K * Wo, 1), 1, Ho);
    if (unfolded.capacity < size_t(K * band * Wo)) {
      unfolded.data.reset();
      unfolded.data.reset(static_cast<float*>(allocate_buffer(size_t(K * band * Wo) * sizeof(float))));
      if (!unfolded.data) return kernel_error(ctx, "conv3d", "out of memory for the unfolded input");
      unfolded.capacity = size_t(K * band * Wo);
    }
    float* u = unfolded.data.get();
    const float* x = X.f32();
    for (int64_t t = 0; t < To; ++t)
      for (int64_t p0 = 0; p0 < Ho; p0 += band) {
        const int64_t rows_here = std::min(band, Ho - p0), n = rows_here * Wo;
        // u[((ci kT + a) kH + b) kW + e, (p - p0) W' + q] = x[ci, t st - front + a, p sh - top + b, q sw - left + e]
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < K; ++r) {
          const int64_t ci = r / (kT * kH * kW), a = r / (kH * kW) % kT, b = r / kW % kH, e = r % kW;
          const int64_t ti = t * st - front + a;
          const int64_t off = e - left;  // the input column of output column q: q sw + off
          const int64_t q0 = std::clamp<int64_t>(off >= 0 ? 0 : (-off + sw - 1) / sw, 0, Wo);
          const int64_t q1 = std::clamp<int64_t>(Wd - off <= 0 ? 0 : (Wd - off + sw - 1) / sw, q0, Wo);
          float* dst = u + r * n;
          for (int64_t p = p0; p < p0 + rows_here; ++p, dst += Wo) {
            const int64_t y = p * sh - top + b;
            if (ti < 0 || ti >= T || y < 0 || y >= H) {
              std::fill(dst, dst + Wo, 0.0f);
              continue;
            }
            const float* src = x + ((ci * T + ti) * H + y) * Wd + off;
            std::fill(dst, dst + q0, 0.0f);
            if (sw == 1) std::copy(src + q0, src + q1, dst + q0);
            else
              for (int64_t q = q0; q < q1; ++q) dst[q] = src[q * sw];
            std::fill(dst + q1, dst + Wo, 0.0f);
          }
        }
        // out[:, t, the band] = w [O, K] @ u [K, n]; an output channel's rows To H' W' apart
        ARCH_TRY_STATUS(matmul_strided_f32(O, K, n, Wt.f32(), K, u, n, false, out.f32() + t * frame_out + p0 * Wo,
                                           To * frame_out, 1.0f, ctx.where));
      }
  }
  if (has_bias) {
    const float* b = ctx.inputs[2].f32();
    float* o = out.f32();
    const int64_t N = To * frame_out;
#pragma omp parallel for schedule(static)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t k = 0; k < N; ++k) o[oc * N + k] += b[oc];
  }
  return {};
}

}  // namespace

void register_cpu_conv3d(OpTable& t) {
  const Kernel* ref = t.kernel("conv3d", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for conv3d");
  t.add_kernel(
      "conv3d", "cpu", [reference = *ref](KernelContext& ctx) { return conv3d_cpu(ctx, reference); }, nullptr, nullptr,
      /*fills=*/true);
}

}  // namespace arch

// The cpu backend's conv1d: the sequence unfolded (im2col) into one row of
// C * K inputs per output position, then one product with the weight read
// as [O, C * K] (as stored: [O, C, K] is that matrix) by oneDNN, the
// unfolded rows as its right operand so the output is [O, L'] as it stands;
// then the bias.
// Whisper's stem is two of these over 3000 frames. groups 1 only, F32; the
// rest goes to the reference, which also words every error.
#include <omp.h>

#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Status conv1d_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1) return reference(ctx);
  const Tensor& X = ctx.inputs[0];
  const Tensor& W = ctx.inputs[1];
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2].data;
  if (!X.data || !W.data || X.dtype != DType::F32 || W.dtype != DType::F32 || X.shape.size() != 2 ||
      W.shape.size() != 3 || (has_bias && ctx.inputs[2].dtype != DType::F32))
    return reference(ctx);
  const int64_t stride = attr_int(ctx.attrs, "stride", 1), padding = attr_int(ctx.attrs, "padding", 0);
  const int64_t dilation = attr_int(ctx.attrs, "dilation", 1), groups = attr_int(ctx.attrs, "groups", 1);
  const int64_t C = X.dim(0), L = X.dim(1), O = W.dim(0), K = W.dim(2);
  if (groups != 1 || W.dim(1) != C || stride < 1 || dilation < 1 || padding < 0 || K < 1) return reference(ctx);
  const int64_t span = L + 2 * padding - dilation * (K - 1) - 1;
  if (span < 0) return reference(ctx);
  const int64_t Lo = span / stride + 1;
  Tensor& out = ctx.outputs[0];
  if (out.dtype != DType::F32 || out.shape != Dims{O, Lo} ||
      (has_bias && ctx.inputs[2].shape != Dims{O}))
    return reference(ctx);
  // cols[t, ci * K + j] = x[ci, t stride - padding + j dilation] (zero outside)
  thread_local std::vector<float> cols;  // kept across calls; every element written
  cols.resize(size_t(Lo * C * K));
  const float* x = X.f32();
  float* c = cols.data();
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < Lo; ++t)
    for (int64_t ci = 0; ci < C; ++ci)
      for (int64_t j = 0; j < K; ++j) {
        const int64_t s = t * stride - padding + j * dilation;
        c[t * C * K + ci * K + j] = s >= 0 && s < L ? x[ci * L + s] : 0.0f;
      }
  // out [O, Lo] = w [O, C K] @ cols^T: the unfolded rows are the product's
  // "N rows of K", so the output comes out as [O, L'] with no transpose.
  ARCH_TRY_STATUS(matmul_strided_f32(O, C * K, Lo, W.f32(), C * K, c, C * K, true, out.f32(), Lo, 1.0f,
                                     ctx.where));
  if (has_bias) {
    const float* b = ctx.inputs[2].f32();
    float* o = out.f32();
#pragma omp parallel for schedule(static)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t t = 0; t < Lo; ++t) o[oc * Lo + t] += b[oc];
  }
  return {};
}

}  // namespace

void register_cpu_conv1d(OpTable& t) {
  const Kernel* ref = t.kernel("conv1d", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for conv1d");
  t.add_kernel(
      "conv1d", "cpu", [reference = *ref](KernelContext& ctx) { return conv1d_cpu(ctx, reference); }, nullptr, nullptr,
      /*fills=*/true);
}

}  // namespace arch

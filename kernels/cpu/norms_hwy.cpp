// The cpu backend's rms_norm and layer_norm: Highway over each row's D
// features, OpenMP over rows. The reference accumulates its sums in double;
// here they are float32 vector sums (several lanes, so each partial sum is
// short), which is well within the ops' 1e-5 tolerance. The formulas and
// their order (y = weight * (x * inv); (x - mean) * rstd * weight + bias)
// are the reference's.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/reference/shape_rules.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/norms_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// sum of x[i] (square: of x[i]^2), or of (x[i] - shift)^2 with `centre`.
template <bool kSquare, bool kCentre>
HWY_INLINE float RowSum(const float* HWY_RESTRICT x, size_t D, float shift) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto vs = hn::Set(d, shift);
  auto term = [&](auto v) {
    if constexpr (kCentre) v = hn::Sub(v, vs);
    if constexpr (kSquare) v = hn::Mul(v, v);
    return v;
  };
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);  // two chains hide the add latency
  size_t i = 0;
  for (; i + 2 * N <= D; i += 2 * N) {
    a0 = hn::Add(a0, term(hn::LoadU(d, x + i)));
    a1 = hn::Add(a1, term(hn::LoadU(d, x + i + N)));
  }
  for (; i + N <= D; i += N) a0 = hn::Add(a0, term(hn::LoadU(d, x + i)));
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; i < D; ++i) {
    float v = x[i];
    if constexpr (kCentre) v -= shift;
    if constexpr (kSquare) v *= v;
    s += v;
  }
  return s;
}

// Rows [0, rows) of x [rows, D]: y = w * (x * inv), inv = 1 / sqrt(mean(x^2) + eps).
void RmsNormRows(const float* HWY_RESTRICT x, const float* HWY_RESTRICT w, float* HWY_RESTRICT y, size_t rows,
                 size_t D, float eps) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r, x += D, y += D) {
    const float variance = RowSum<true, false>(x, D, 0.0f) / float(D);
    const float inv = 1.0f / std::sqrt(variance + eps);
    const auto vinv = hn::Set(d, inv);
    size_t i = 0;
    if (w) {
      for (; i + N <= D; i += N)
        hn::StoreU(hn::Mul(hn::LoadU(d, w + i), hn::Mul(hn::LoadU(d, x + i), vinv)), d, y + i);
      for (; i < D; ++i) y[i] = w[i] * (x[i] * inv);
    } else {
      for (; i + N <= D; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, y + i);
      for (; i < D; ++i) y[i] = x[i] * inv;
    }
  }
}

// Rows of x [rows, D]: y = (x - mean) * rstd [* w] [+ b], biased variance;
// two passes (mean, then squared deviations) so nothing cancels.
void LayerNormRows(const float* HWY_RESTRICT x, const float* HWY_RESTRICT w, const float* HWY_RESTRICT b,
                   float* HWY_RESTRICT y, size_t rows, size_t D, float eps) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r, x += D, y += D) {
    const float mean = RowSum<false, false>(x, D, 0.0f) / float(D);
    const float var = RowSum<true, true>(x, D, mean) / float(D);
    const float rstd = 1.0f / std::sqrt(var + eps);
    const auto vmean = hn::Set(d, mean), vrstd = hn::Set(d, rstd);
    size_t i = 0;
    for (; i + N <= D; i += N) {
      auto v = hn::Mul(hn::Sub(hn::LoadU(d, x + i), vmean), vrstd);
      if (w) v = hn::Mul(v, hn::LoadU(d, w + i));
      if (b) v = hn::Add(v, hn::LoadU(d, b + i));
      hn::StoreU(v, d, y + i);
    }
    for (; i < D; ++i) {
      float v = (x[i] - mean) * rstd;
      if (w) v = v * w[i];
      if (b) v = v + b[i];
      y[i] = v;
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(RmsNormRows);
HWY_EXPORT(LayerNormRows);

namespace {

// Rows per OpenMP chunk: about 16K elements; a tensor under kParallelMin
// elements (a decode step, a short prompt) stays on one thread, where a
// norm takes microseconds and waking the pool would cost as much.
constexpr int64_t kChunkElems = 1 << 14;
constexpr int64_t kParallelMin = 1 << 17;

Kernel reference_of(const OpTable& t, const char* op) {
  const Kernel* k = t.kernel(op, "reference");
  if (!k) throw std::logic_error(std::string("cpu kernels: no reference kernel for ") + op);
  return *k;
}

// x [..., D] F32 with an F32 output of its shape, and each present
// per-feature input (inputs 1..) F32 of D elements: the case the fast
// kernels take. Anything else goes to the reference kernel, whose error
// messages are the op's.
bool fast_case(const KernelContext& ctx, size_t max_inputs) {
  if (ctx.inputs.empty() || ctx.inputs.size() > max_inputs || ctx.outputs.size() != 1) return false;
  const Tensor& X = ctx.inputs[0];
  if (!X.data || X.dtype != DType::F32 || X.shape.empty()) return false;
  if (ctx.outputs[0].dtype != DType::F32 || ctx.outputs[0].shape != X.shape) return false;
  for (size_t i = 1; i < ctx.inputs.size(); ++i)
    if (has_input(ctx, i) && (ctx.inputs[i].dtype != DType::F32 || ctx.inputs[i].numel() != X.dim(-1)))
      return false;
  return true;
}

// f(row0, nrows) over all rows of x, in parallel chunks when there is enough work.
template <class F>
void over_rows(int64_t rows, int64_t D, F f) {
  const int64_t per = std::max<int64_t>(1, kChunkElems / std::max<int64_t>(D, 1));
  const int64_t chunks = (rows + per - 1) / per;
  parallel_for(chunks, rows * D >= kParallelMin, [&](int64_t c) { f(c * per, std::min(per, rows - c * per)); });
}

const float* optional_f32(const KernelContext& ctx, size_t i) {
  return has_input(ctx, i) ? ctx.inputs[i].f32() : nullptr;
}

}  // namespace

void register_cpu_norms(OpTable& t) {
  t.add_kernel("rms_norm", "cpu", [reference = reference_of(t, "rms_norm")](KernelContext& ctx) -> Status {
    if (!fast_case(ctx, 2)) return reference(ctx);
    const Tensor& X = ctx.inputs[0];
    const int64_t D = X.dim(-1), rows = D ? X.numel() / D : 0;
    const float eps = float(attr_float(ctx.attrs, "eps", 1e-6));
    const float* x = X.f32();
    const float* w = optional_f32(ctx, 1);
    float* y = ctx.outputs[0].f32();
    over_rows(rows, D, [&](int64_t r0, int64_t n) {
      HWY_DYNAMIC_DISPATCH(RmsNormRows)(x + r0 * D, w, y + r0 * D, size_t(n), size_t(D), eps);
    });
    return {};
  }, nullptr, nullptr, /*fills=*/true);  // every row written
  t.add_kernel("layer_norm", "cpu", [reference = reference_of(t, "layer_norm")](KernelContext& ctx) -> Status {
    if (!fast_case(ctx, 3)) return reference(ctx);
    const Tensor& X = ctx.inputs[0];
    const int64_t D = X.dim(-1), rows = D ? X.numel() / D : 0;
    const float eps = float(attr_float(ctx.attrs, "eps", 1e-5));
    const float* x = X.f32();
    const float* w = optional_f32(ctx, 1);
    const float* b = optional_f32(ctx, 2);
    float* y = ctx.outputs[0].f32();
    over_rows(rows, D, [&](int64_t r0, int64_t n) {
      HWY_DYNAMIC_DISPATCH(LayerNormRows)(x + r0 * D, w, b, y + r0 * D, size_t(n), size_t(D), eps);
    });
    return {};
  }, nullptr, nullptr, /*fills=*/true);
}

}  // namespace arch
#endif  // HWY_ONCE

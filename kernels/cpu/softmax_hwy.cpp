// The cpu backend's softmax over the last dim: per row a vector max, one
// pass writing exp(x - max) and summing it (float32 lanes; the reference
// sums in double, well within the 1e-5 tolerance), then the division.
// Highway's Exp (1 ulp) stands for std::exp. OpenMP over rows.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/reference/shape_rules.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/softmax_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// max(x) over n > 0 values: the vector part, then the tail.
float RowMax(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  float mx = x[0];
  size_t i = 0;
  if (n >= N) {
    auto vm = hn::LoadU(d, x);
    for (i = N; i + N <= n; i += N) vm = hn::Max(vm, hn::LoadU(d, x + i));
    mx = hn::GetLane(hn::MaxOfLanes(d, vm));
  }
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  return mx;
}

// Rows of x [rows, D] (D > 0): y = exp(x - max) / sum(exp(x - max)).
void SoftmaxRows(const float* HWY_RESTRICT x, float* HWY_RESTRICT y, size_t rows, size_t D) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r, x += D, y += D) {
    const float mx = RowMax(x, D);
    // y = exp(x - max), summed; the tail through a padded buffer (padding
    // lanes are -inf, whose exp is 0) so it sees the same vector code.
    const auto vmx = hn::Set(d, mx);
    auto vsum = hn::Zero(d);
    size_t i = 0;
    for (; i + N <= D; i += N) {
      const auto e = hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vmx));
      hn::StoreU(e, d, y + i);
      vsum = hn::Add(vsum, e);
    }
    if (i < D) {
      HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)];
      std::fill(buf, buf + N, -INFINITY);
      std::memcpy(buf, x + i, (D - i) * sizeof(float));
      const auto e = hn::Exp(d, hn::Sub(hn::Load(d, buf), vmx));
      vsum = hn::Add(vsum, e);
      hn::Store(e, d, buf);
      std::memcpy(y + i, buf, (D - i) * sizeof(float));
    }
    const float total = hn::GetLane(hn::SumOfLanes(d, vsum));
    // y = y / total
    const auto vt = hn::Set(d, total);
    for (i = 0; i + N <= D; i += N) hn::StoreU(hn::Div(hn::LoadU(d, y + i), vt), d, y + i);
    for (; i < D; ++i) y[i] = y[i] / total;
  }
}

// log(sum(exp(x))) over n > 0 values: the max, then exp(x - max) summed in
// f32 lanes a block at a time and the blocks added in double.
double LogSumExp(const float* HWY_RESTRICT x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const float mx = RowMax(x, n);
  if (mx == -INFINITY || mx != mx) return mx;  // nothing to weigh, or NaN
  const auto vmx = hn::Set(d, mx);
  double total = 0;
  size_t i = 0;
  while (i + N <= n) {
    auto vsum = hn::Zero(d);
    for (const size_t end = std::min(n, i + 1024); i + N <= end; i += N)
      vsum = hn::Add(vsum, hn::Exp(d, hn::Sub(hn::LoadU(d, x + i), vmx)));
    total += double(hn::GetLane(hn::SumOfLanes(d, vsum)));
  }
  for (; i < n; ++i) total += std::exp(double(x[i]) - mx);
  return double(mx) + std::log(total);
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(LogSumExp);

double log_sum_exp(std::span<const float> x) {
  return x.empty() ? -INFINITY : HWY_DYNAMIC_DISPATCH(LogSumExp)(x.data(), x.size());
}

namespace {

// Rows per OpenMP chunk: about 16K elements; under kParallelMin elements
// (a decode step's rows) one thread, waking the pool costing as much.
constexpr int64_t kChunkElems = 1 << 14;
constexpr int64_t kParallelMin = 1 << 16;

}  // namespace

void register_cpu_softmax(OpTable& t) {
  const Kernel* ref = t.kernel("softmax", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for softmax");
  t.add_kernel("softmax", "cpu", [reference = *ref](KernelContext& ctx) -> Status {
    // Anything but F32 x [..., D] and an F32 output of its shape: the
    // reference kernel, for its error message.
    if (ctx.inputs.size() != 1 || ctx.outputs.size() != 1 || !ctx.inputs[0].data ||
        ctx.inputs[0].dtype != DType::F32 || ctx.inputs[0].shape.empty() ||
        ctx.outputs[0].dtype != DType::F32 || ctx.outputs[0].shape != ctx.inputs[0].shape)
      return reference(ctx);
    const Tensor& X = ctx.inputs[0];
    const int64_t D = X.dim(-1), rows = D ? X.numel() / D : 0;
    const float* x = X.f32();
    float* y = ctx.outputs[0].f32();
    const int64_t per = std::max<int64_t>(1, kChunkElems / std::max<int64_t>(D, 1));
    const int64_t chunks = (rows + per - 1) / per;
    parallel_for(chunks, rows * D >= kParallelMin, [&](int64_t c) {
      const int64_t r0 = c * per, n = std::min(per, rows - r0);
      HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x + r0 * D, y + r0 * D, size_t(n), size_t(D));
    });
    return {};
  }, nullptr, nullptr, /*fills=*/true);  // every row written
}

}  // namespace arch
#endif  // HWY_ONCE

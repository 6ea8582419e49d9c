// Dot(a, b, n): a float32 dot product with two accumulator chains, for any
// Highway target; included per target (after HWY_TARGET_INCLUDE's
// foreach_target) by the kernels that take rows' dot products one at a
// time (attention's scores, the delta rule's k . q).
#if defined(ARCH_KERNELS_CPU_DOT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef ARCH_KERNELS_CPU_DOT_INL_H_
#undef ARCH_KERNELS_CPU_DOT_INL_H_
#else
#define ARCH_KERNELS_CPU_DOT_INL_H_
#endif

#include <cstdint>

#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {

HWY_INLINE float Dot(const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, int64_t n) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  auto s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
    s1 = hn::MulAdd(hn::LoadU(d, a + i + N), hn::LoadU(d, b + i + N), s1);
  }
  for (; i + N <= n; i += N) s0 = hn::MulAdd(hn::LoadU(d, a + i), hn::LoadU(d, b + i), s0);
  float s = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#endif  // ARCH_KERNELS_CPU_DOT_INL_H_

// Matrix times a few vectors with the weights widened in registers:
// y[m, n] = sum_k x[m, k] * w[n, k] for n in [n0, n1), w stored [N, K] as
// F32, BF16 or F16. The decode path (a handful of rows of x) is bound by
// reading w once, so w is never converted in memory; each loaded weight
// vector feeds up to four rows of x. Accumulation is in f32, as exact as the
// reference's order allows.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/gemv_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include "kernels/cpu/gemv.h"

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class DF, typename TW>
HWY_INLINE hn::Vec<DF> LoadWidened(DF df, const TW* p) {
  if constexpr (std::is_same_v<TW, float>) {
    return hn::LoadU(df, p);
  } else {
    const hn::Rebind<TW, DF> dw;
    return hn::PromoteTo(df, hn::LoadU(dw, p));
  }
}

template <typename TW>
HWY_INLINE float Widen(TW v) {
  if constexpr (std::is_same_v<TW, float>) return v;
  else if constexpr (std::is_same_v<TW, hwy::bfloat16_t>) return hwy::F32FromBF16(v);
  else {
    uint16_t bits;
    hwy::CopyBytes<2>(&v, &bits);
    return f16_to_f32(bits);
  }
}

// MR rows of x against NR rows of w, all K.
template <int MR, int NR, typename TW>
HWY_INLINE void Tile(const float* x, int64_t ldx, const TW* w, int64_t K, float* y, int64_t ldy) {
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[MR][NR];
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < NR; ++r) acc[m][r] = hn::Zero(df);
  int64_t k = 0;
  for (; k + L <= K; k += L) {
    hn::Vec<decltype(df)> wv[NR];
    for (int r = 0; r < NR; ++r) wv[r] = LoadWidened(df, w + r * K + k);
    for (int m = 0; m < MR; ++m) {
      const auto xv = hn::LoadU(df, x + m * ldx + k);
      for (int r = 0; r < NR; ++r) acc[m][r] = hn::MulAdd(xv, wv[r], acc[m][r]);
    }
  }
  for (int m = 0; m < MR; ++m)
    for (int r = 0; r < NR; ++r) {
      float s = hn::GetLane(hn::SumOfLanes(df, acc[m][r]));
      for (int64_t t = k; t < K; ++t) s += x[m * ldx + t] * Widen(w[r * K + t]);
      y[m * ldy + r] = s;
    }
}

template <int MR, typename TW>
HWY_INLINE void Rows(const float* x, int64_t ldx, const TW* w, int64_t K, int64_t n0, int64_t n1, float* y,
                     int64_t ldy) {
  // One weight row at a time: a single sequential stream per thread is what
  // the hardware prefetchers follow best.
  for (int64_t n = n0; n < n1; ++n) Tile<MR, 1>(x, ldx, w + n * K, K, y + n, ldy);
}

template <typename TW>
void GemvTyped(const float* x, int64_t M, int64_t ldx, const TW* w, int64_t K, int64_t n0, int64_t n1, float* y,
               int64_t ldy) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) Rows<4>(x + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy);
  switch (M - m) {
    case 3: Rows<3>(x + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy); break;
    case 2: Rows<2>(x + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy); break;
    case 1: Rows<1>(x + m * ldx, ldx, w, K, n0, n1, y + m * ldy, ldy); break;
    default: break;
  }
}

void Gemv(const GemvArgs& a) {
  switch (a.w_type) {
    case DType::BF16:
      GemvTyped(a.x, a.M, a.ldx, static_cast<const hwy::bfloat16_t*>(a.w), a.K, a.n0, a.n1, a.y, a.ldy);
      break;
    case DType::F16:
      GemvTyped(a.x, a.M, a.ldx, static_cast<const hwy::float16_t*>(a.w), a.K, a.n0, a.n1, a.y, a.ldy);
      break;
    default: GemvTyped(a.x, a.M, a.ldx, static_cast<const float*>(a.w), a.K, a.n0, a.n1, a.y, a.ldy); break;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(Gemv);

void gemv(const GemvArgs& a) { HWY_DYNAMIC_DISPATCH(Gemv)(a); }

}  // namespace arch
#endif

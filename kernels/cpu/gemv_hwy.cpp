// Matrix times a few vectors with the weights widened in registers:
// y[m, n] = sum_k x[m, k] * w[n, k] for n in [n0, n1), w stored [N, K] as
// F32, BF16 or F16. The decode path (a handful of rows of x) is bound by
// reading w once, so w is never converted in memory; each loaded weight
// vector feeds up to four rows of x. Accumulation is in f32, as exact as the
// reference's order allows.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/gemv_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/cache_control.h>
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

// MR rows of x against NR rows of w, all K. Each sum runs in C chains
// over alternate vectors of k, enough that consecutive FMAs do not wait on
// each other, and GCC 12 keeps the accumulators in registers only with
// the small loops unrolled (left alone it stored one to memory after every
// FMA). One row of x, one core, in cache: F32 42 -> 66 GB/s on AVX-512,
// BF16 rows 17 -> 49 on AVX2.
template <int MR, int NR, typename TW>
HWY_INLINE void Tile(const float* x, int64_t ldx, const TW* w, int64_t K, float* y, int64_t ldy) {
  constexpr int C = MR * NR >= 4 ? 1 : 4 / (MR * NR);
  const hn::ScalableTag<float> df;
  const int64_t L = int64_t(hn::Lanes(df));
  hn::Vec<decltype(df)> acc[C][MR][NR];
  #pragma GCC unroll 4
  for (int c = 0; c < C; ++c)
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m)
      #pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) acc[c][m][r] = hn::Zero(df);
  int64_t k = 0;
  for (; k + C * L <= K; k += C * L)
    #pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
      hn::Vec<decltype(df)> wv[NR];
      #pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) wv[r] = LoadWidened(df, w + r * K + k + c * L);
      #pragma GCC unroll 4
      for (int m = 0; m < MR; ++m) {
        const auto xv = hn::LoadU(df, x + m * ldx + k + c * L);
        #pragma GCC unroll 4
        for (int r = 0; r < NR; ++r) acc[c][m][r] = hn::MulAdd(xv, wv[r], acc[c][m][r]);
      }
    }
  for (; k + L <= K; k += L) {
    hn::Vec<decltype(df)> wv[NR];
    #pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) wv[r] = LoadWidened(df, w + r * K + k);
    #pragma GCC unroll 4
    for (int m = 0; m < MR; ++m) {
      const auto xv = hn::LoadU(df, x + m * ldx + k);
      #pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) acc[0][m][r] = hn::MulAdd(xv, wv[r], acc[0][m][r]);
    }
  }
  #pragma GCC unroll 4
  for (int m = 0; m < MR; ++m)
    #pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      #pragma GCC unroll 4
      for (int c = 1; c < C; ++c) acc[0][m][r] = hn::Add(acc[0][m][r], acc[c][m][r]);
      float s = hn::GetLane(hn::SumOfLanes(df, acc[0][m][r]));
      for (int64_t t = k; t < K; ++t) s += x[m * ldx + t] * Widen(w[r * K + t]);
      y[m * ldy + r] = s;
    }
}

// How far ahead of the row being read one line of each 4 KiB page is
// prefetched. F32 and F16 weights (and BF16 rows without AVX-512 BF16) were
// used as mapped from the file, on 4 KiB pages (the matmul's are now copied
// onto 2 MiB pages at load, matmul_cpu.cpp; rows still get 4 KiB pages
// where the system has no transparent huge pages), and the hardware
// prefetchers stop at every page's end: touching each page this far ahead
// starts its stream (and its page walk) early. The f32 gemv over 1 GiB of a
// mapped file, alternated 1700 times: 52.8 -> 58.6 GB/s when the machine
// read about 60 (2 MiB pages: 60.5), 34.5 -> 35.7 at about 36; 32 KiB ahead
// gained little, 64 KiB most of it. Decode at about 64 GB/s: 0.5B f32
// 23.6-25.0 -> 24.9-26.7 tok/s, 1B f32 10.1 -> 11.0. Rows on 2 MiB pages
// (merged projections, rewritten at load) lose nothing by it: the same
// gemv alternated 630 times, mapped and copied to 2 MiB pages, with and
// without: mapped 52.3 -> 61.0 and 33.6 -> 36.2 GB/s, 2 MiB pages 61.7 ->
// 62.3 and 36.0 -> 36.2 (high and low state). So it is not made to depend
// on where the weights lie.
constexpr int64_t kPageAheadBytes = 128 << 10;

template <int MR, typename TW>
HWY_INLINE void Rows(const float* x, int64_t ldx, const TW* w, int64_t K, int64_t n0, int64_t n1, float* y,
                     int64_t ldy) {
  // One weight row at a time: a single sequential stream per thread is what
  // the hardware prefetchers follow best.
  constexpr int64_t ahead = kPageAheadBytes / int64_t(sizeof(TW)), page = 4096 / int64_t(sizeof(TW));
  for (int64_t n = n0; n < n1; ++n) {
    // Integer arithmetic: the address may lie past the matrix (a prefetch
    // never faults), and a pointer there would not be a valid one.
    const uintptr_t row = reinterpret_cast<uintptr_t>(w + n * K);
    for (int64_t k = 0; k < K; k += page)
      hwy::Prefetch(reinterpret_cast<const TW*>(row + uintptr_t(k + ahead) * sizeof(TW)));
    Tile<MR, 1>(x, ldx, w + n * K, K, y + n, ldy);
  }
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

// The cpu backend's causal_conv1d: the reference's sums (same order, over
// the same RecurrentState, so a session may switch backends), vectorised
// across channels. Short pieces (decode) go channel by channel through the
// window as the state keeps it ([C, K], K = 4 loaded deinterleaved); long
// ones (a prompt) row by row over the time-major x, the weight transposed
// to [K, C] once and the window's last K - 1 inputs as the rows before the
// first.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/reference/recurrent_state.h"
#include "kernels/reference/shape_rules.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/causal_conv1d_cpu.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Channels [c0, c1) through `rows` rows of x [rows, C] (row stride C),
// each channel's window [K] (oldest first) shifted as it goes.
void ConvChannels(float* HWY_RESTRICT window, const float* HWY_RESTRICT w, const float* HWY_RESTRICT x,
                  float* HWY_RESTRICT y, int64_t C, int64_t K, int64_t rows, int64_t c0, int64_t c1) {
  int64_t c = c0;
#if HWY_TARGET != HWY_SCALAR
  if (K == 4) {
    const hn::ScalableTag<float> d;
    const int64_t N = int64_t(hn::Lanes(d));
    for (; c + N <= c1; c += N) {
      hn::Vec<decltype(d)> a0, a1, a2, a3, w0, w1, w2, w3;
      hn::LoadInterleaved4(d, window + c * 4, a0, a1, a2, a3);
      hn::LoadInterleaved4(d, w + c * 4, w0, w1, w2, w3);
      for (int64_t t = 0; t < rows; ++t) {
        a0 = a1, a1 = a2, a2 = a3, a3 = hn::LoadU(d, x + t * C + c);
        auto acc = hn::Mul(w0, a0);
        acc = hn::MulAdd(w1, a1, acc);
        acc = hn::MulAdd(w2, a2, acc);
        hn::StoreU(hn::MulAdd(w3, a3, acc), d, y + t * C + c);
      }
      hn::StoreInterleaved4(a0, a1, a2, a3, d, window + c * 4);
    }
  }
#endif
  for (; c < c1; ++c) {
    float* win = window + c * K;
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t j = 0; j + 1 < K; ++j) win[j] = win[j + 1];
      win[K - 1] = x[t * C + c];
      float acc = 0.0f;
      for (int64_t j = 0; j < K; ++j) acc += w[c * K + j] * win[j];
      y[t * C + c] = acc;
    }
  }
}

// One row: y[c] = sum_j wt[j][c] src[j][c] (wt [K, C], src the row's K inputs, oldest first).
void ConvRow(const float* const* src, const float* HWY_RESTRICT wt, float* HWY_RESTRICT y, int64_t C, int64_t K) {
  const hn::ScalableTag<float> d;
  const int64_t N = int64_t(hn::Lanes(d));
  int64_t c = 0;
  for (; c + 2 * N <= C; c += 2 * N) {
    auto a0 = hn::Mul(hn::LoadU(d, wt + c), hn::LoadU(d, src[0] + c));
    auto a1 = hn::Mul(hn::LoadU(d, wt + c + N), hn::LoadU(d, src[0] + c + N));
    for (int64_t j = 1; j < K; ++j) {
      a0 = hn::MulAdd(hn::LoadU(d, wt + j * C + c), hn::LoadU(d, src[j] + c), a0);
      a1 = hn::MulAdd(hn::LoadU(d, wt + j * C + c + N), hn::LoadU(d, src[j] + c + N), a1);
    }
    hn::StoreU(a0, d, y + c);
    hn::StoreU(a1, d, y + c + N);
  }
  for (; c < C; ++c) {
    float acc = 0.0f;
    for (int64_t j = 0; j < K; ++j) acc += wt[j * C + c] * src[j][c];
    y[c] = acc;
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(ConvChannels);
HWY_EXPORT(ConvRow);

namespace {

// Pieces of at least this many rows go row by row (the channel-major walk
// reads x with a stride of C floats, a new page every row for C = 8192).
constexpr int64_t kByRowsMin = 16;
// Widest kernel the row path takes (its row pointers on the stack); wider
// ones go channel by channel.
constexpr int64_t kMaxTaps = 64;
// Channels per work item of the channel path; rows per item of the row path.
constexpr int64_t kChannelBlock = 1024, kRowBlock = 16;
// Below this many multiply-adds a piece stays on one thread.
constexpr int64_t kParallelMin = 1 << 16;

Status causal_conv1d_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() != 2 || ctx.outputs.size() != 2) return reference(ctx);
  const Tensor &X = ctx.inputs[0], &W = ctx.inputs[1];
  if (!X.data || !W.data || X.dtype != DType::F32 || W.dtype != DType::F32 || X.shape.size() != 2 ||
      W.shape.size() != 2 || X.dim(1) != W.dim(0) || W.dim(1) < 1 || ctx.outputs[0].dtype != DType::F32 ||
      ctx.outputs[0].shape != X.shape)
    return reference(ctx);
  const int64_t S = X.dim(0), C = X.dim(1), K = W.dim(1);
  ARCH_TRY(StateCall call, begin_state_call(ctx, "causal_conv1d", S, C * K));
  const float* x = X.f32();
  const float* w = W.f32();
  float* y = ctx.outputs[0].f32();
  auto by_rows = [&](const StatePiece& p) { return p.rows >= kByRowsMin && K <= kMaxTaps; };

  // Short pieces: (piece, channel block) items.
  std::vector<const StatePiece*> shorts;
  int64_t short_work = 0;
  for (const StatePiece& p : call.pieces)
    if (p.rows > 0 && !by_rows(p)) shorts.push_back(&p), short_work += p.rows * C * K;
  const int64_t blocks = (C + kChannelBlock - 1) / kChannelBlock;
  parallel_for(int64_t(shorts.size()) * blocks, short_work >= kParallelMin, [&](int64_t i) {
    const StatePiece& p = *shorts[size_t(i / blocks)];
    const int64_t c0 = (i % blocks) * kChannelBlock;
    HWY_DYNAMIC_DISPATCH(ConvChannels)(call.state->slot(p.slot), w, x + p.row * C, y + p.row * C, C, K, p.rows, c0,
                                       std::min(C, c0 + kChannelBlock));
  });

  // Long pieces: row blocks, reading the window's inputs before the first row.
  std::vector<float> wt, hist;
  for (const StatePiece& p : call.pieces) {
    if (p.rows == 0 || !by_rows(p)) continue;
    if (wt.empty()) {
      wt.resize(size_t(K * C));
      for (int64_t c = 0; c < C; ++c)
        for (int64_t j = 0; j < K; ++j) wt[size_t(j * C + c)] = w[c * K + j];
    }
    float* window = call.state->slot(p.slot);
    hist.resize(size_t((K - 1) * C));  // [K - 1, C]: the inputs at rows -(K - 1) .. -1
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m + 1 < K; ++m) hist[size_t(m * C + c)] = window[c * K + 1 + m];
    const float* xp = x + p.row * C;
    auto input = [&](int64_t t) { return t >= 0 ? xp + t * C : hist.data() + (t + K - 1) * C; };
    const int64_t row_blocks = (p.rows + kRowBlock - 1) / kRowBlock;
    parallel_for(row_blocks, p.rows * C * K >= kParallelMin, [&](int64_t b) {
      const float* src[kMaxTaps];
      for (int64_t t = b * kRowBlock; t < std::min(p.rows, (b + 1) * kRowBlock); ++t) {
        for (int64_t j = 0; j < K; ++j) src[j] = input(t - (K - 1) + j);
        HWY_DYNAMIC_DISPATCH(ConvRow)(src, wt.data(), y + (p.row + t) * C, C, K);
      }
    });
    // The last K inputs, oldest first.
    for (int64_t m = 0; m < K; ++m) {
      const float* in = input(p.rows - K + m);
      for (int64_t c = 0; c < C; ++c) window[c * K + m] = in[c];
    }
  }
  end_state_call(call);
  view_state(ctx, 1, call, {C, K});
  return {};
}

}  // namespace

void register_cpu_causal_conv1d(OpTable& t) {
  const Kernel* ref = t.kernel("causal_conv1d", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for causal_conv1d");
  t.add_kernel(
      "causal_conv1d", "cpu", [reference = *ref](KernelContext& ctx) { return causal_conv1d_cpu(ctx, reference); },
      nullptr, nullptr, /*fills=*/true);
}

}  // namespace arch
#endif  // HWY_ONCE

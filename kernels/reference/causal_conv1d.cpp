// causal_conv1d(x [seq, C], weight [C, K]) -> (y [seq, C], window [C, K]):
// a depthwise convolution over time that sees only the present and the
// K - 1 inputs before it, y[t, c] = sum_j weight[c, j] x[t - (K - 1) + j, c],
// the inputs before the session's first being zeros (transformers'
// causal_conv1d_fn and causal_conv1d_update: Qwen3-Next's and Mamba's
// short convolution). Stateful: the session keeps each channel's last K
// inputs (RecurrentState), so a decode step continues a prompt exactly;
// `window` is that state after the call, [C, K] oldest first, as
// transformers' cache holds it (conv_states). No bias or activation: the
// template adds them.
#include "kernels/reference/ops.h"
#include "kernels/reference/recurrent_state.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> causal_conv1d_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                    const Attrs&) {
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  if (x.size() != 2 || w.size() != 2)
    return error("causal_conv1d: x must be [seq, C] and weight [C, K], got " + shape_str(x) + ", " + shape_str(w));
  if (!w[0].concrete() || !w[1].concrete() || w[1].n < 1 || x[1] != w[0])
    return error("causal_conv1d: weight " + shape_str(w) + " must be [C, K] for x's C channels, x " + shape_str(x));
  return std::vector<TypedShape>{{DType::F32, x}, {DType::F32, {w[0], w[1]}}};
}

Status causal_conv1d_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "causal_conv1d", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "causal_conv1d", 1));
  const Tensor& X = ctx.inputs[0];
  const Tensor& W = ctx.inputs[1];
  if (X.shape.size() != 2 || W.shape.size() != 2 || X.dim(1) != W.dim(0))
    return kernel_error(ctx, "causal_conv1d", "bad shapes x " + dims_str(X.shape) + ", weight " + dims_str(W.shape));
  const int64_t S = X.dim(0), C = X.dim(1), K = W.dim(1);
  ARCH_TRY_STATUS(expect_output(ctx, "causal_conv1d", 0, {S, C}));
  ARCH_TRY(StateCall call, begin_state_call(ctx, "causal_conv1d", S, C * K));
  const float* x = X.f32();
  const float* w = W.f32();
  float* y = ctx.outputs[0].f32();
  for (const StatePiece& p : call.pieces) {
    float* window = call.state->slot(p.slot);  // [C, K]: each channel's last K inputs, oldest first
    for (int64_t t = p.row; t < p.row + p.rows; ++t)
      for (int64_t c = 0; c < C; ++c) {
        float* win = window + c * K;
        for (int64_t j = 0; j + 1 < K; ++j) win[j] = win[j + 1];
        win[K - 1] = x[t * C + c];
        float acc = 0.0f;
        for (int64_t j = 0; j < K; ++j) acc += w[c * K + j] * win[j];
        y[t * C + c] = acc;
      }
  }
  end_state_call(call);
  view_state(ctx, 1, call, {C, K});
  return {};
}

// Some channels: x's and the weight's rows of them; the window (the state)
// holds the same channels.
Result<SplitAnswer> causal_conv1d_split(const SplitQuery& q) {
  if (q.want.size() != 2 || q.want[0].axis != 1) return error("causal_conv1d: only a part of its channels is defined");
  const Part& want = q.want[0];
  const Part window{0, want.ranges};
  if (q.want[1].axis != kOpenPart && q.want[1] != window)
    return error("causal_conv1d: its window is wanted in another part than its channels");
  SplitAnswer a{{want, window}, q.attrs};
  a.outputs = {want, window};
  return a;
}

}  // namespace

void define_causal_conv1d(OpTable& t) {
  t.define(checked(OpDef{
               .name = "causal_conv1d",
               .inputs = {"x", "weight"},
               .attrs = {},
               .num_outputs = 2,
               .shape = causal_conv1d_shape,
               .tolerance = {1e-5, 1e-6},
               .stateful = true,
               .sequences = true,
               .state_bytes = [](std::span<const TypedShape> in, std::span<const TypedShape>) -> int64_t {
                 return in[1].shape[0].n * in[1].shape[1].n * int64_t(sizeof(float));
               },
               .fills = true,
               .split = causal_conv1d_split,
               .doc = "causal_conv1d(x [seq, C], weight [C, K]) -> (y [seq, C], window [C, K]): depthwise "
                      "convolution over the present and the K - 1 inputs before it (zeros before the first), "
                      "the last K inputs kept per sequence; window: them after the call",
           }),
           causal_conv1d_kernel);
}

}  // namespace arch

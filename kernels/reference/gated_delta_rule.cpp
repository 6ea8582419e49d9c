// gated_delta_rule(q [seq, KH, Dk], k [seq, KH, Dk], v [seq, H, Dv],
// g [seq, H], beta [seq, H]) -> (o [seq, H, Dv], state [H, Dk, Dv]): Gated
// DeltaNet's recurrence (Yang, Kautz and Hatamizadeh, 2025), one matrix
// S [Dk, Dv] per value head, for each position in turn:
//   S = exp(g) S                          (the gate: forget a little)
//   S = S + k (beta (v - S^T k))^T        (the delta rule: write v at k)
//   o = S^T q
// Value head h reads key head h / (H / KH) (transformers' repeat_interleave).
// q and k come normalised and q scaled as the template wants them
// (Qwen3-Next: l2-normed, q by Dk^-1/2). Stateful: the session keeps each
// head's S (RecurrentState), zeros at the start, so a decode step continues
// a prompt exactly; `state` is S after the call, as transformers' cache
// holds it (recurrent_states). This kernel is the recurrence itself, one
// position at a time (transformers' torch_recurrent_gated_delta_rule); the
// fast one runs a prompt by chunks (the same sums, regrouped).
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/recurrent_state.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> gated_delta_rule_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                       const Attrs&) {
  const Shape &q = in[0].shape, &k = in[1].shape, &v = in[2].shape, &g = in[3].shape, &beta = in[4].shape;
  auto all = [&] {
    return "q " + shape_str(q) + ", k " + shape_str(k) + ", v " + shape_str(v) + ", g " + shape_str(g) + ", beta " +
           shape_str(beta);
  };
  if (q.size() != 3 || k.size() != 3 || v.size() != 3 || g.size() != 2 || beta.size() != 2)
    return error("gated_delta_rule: q, k must be [seq, KH, Dk], v [seq, H, Dv], g and beta [seq, H], got " + all());
  if (q != k || v[0] != q[0] || g != Shape{v[0], v[1]} || beta != g)
    return error("gated_delta_rule: q and k must agree, and v, g, beta have q's positions and v's heads, got " + all());
  for (const Dim& d : {q[1], q[2], v[1], v[2]})
    if (!d.concrete() || d.n < 1) return error("gated_delta_rule: heads and head dims must be concrete, got " + all());
  if (v[1].n % q[1].n != 0)
    return error("gated_delta_rule: the value heads (" + std::to_string(v[1].n) + ") must be a multiple of the key heads (" +
                 std::to_string(q[1].n) + ")");
  return std::vector<TypedShape>{{DType::F32, v}, {DType::F32, {v[1], q[2], v[2]}}};
}

Status gated_delta_rule_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 5; ++i) ARCH_TRY_STATUS(expect_f32(ctx, "gated_delta_rule", i));
  const Tensor &Q = ctx.inputs[0], &Kt = ctx.inputs[1], &V = ctx.inputs[2], &G = ctx.inputs[3], &B = ctx.inputs[4];
  const int64_t S = V.dim(0), H = V.dim(1), Dv = V.dim(2), KH = Q.dim(1), Dk = Q.dim(2);
  if (Q.shape != Kt.shape || Q.dim(0) != S || G.shape != Dims{S, H} || B.shape != Dims{S, H} || H % KH != 0)
    return kernel_error(ctx, "gated_delta_rule", "bad shapes q " + dims_str(Q.shape) + ", k " + dims_str(Kt.shape) +
                                                     ", v " + dims_str(V.shape) + ", g " + dims_str(G.shape));
  ARCH_TRY_STATUS(expect_output(ctx, "gated_delta_rule", 0, {S, H, Dv}));
  ARCH_TRY(StateCall call, begin_state_call(ctx, "gated_delta_rule", S, H * Dk * Dv));
  const int64_t per_key = H / KH;
  float* o = ctx.outputs[0].f32();
  std::vector<float> delta(size_t(Dv), 0.0f);
  for (const StatePiece& p : call.pieces)
    for (int64_t t = p.row; t < p.row + p.rows; ++t)
      for (int64_t h = 0; h < H; ++h) {
        float* s = call.state->slot(p.slot) + h * Dk * Dv;  // S [Dk, Dv]
        const float* q = Q.f32() + (t * KH + h / per_key) * Dk;
        const float* k = Kt.f32() + (t * KH + h / per_key) * Dk;
        const float* v = V.f32() + (t * H + h) * Dv;
        const float decay = std::exp(G.f32()[t * H + h]), beta = B.f32()[t * H + h];
        for (int64_t i = 0; i < Dk * Dv; ++i) s[i] *= decay;
        // delta = beta (v - S^T k)
        for (int64_t j = 0; j < Dv; ++j) {
          float mem = 0.0f;
          for (int64_t i = 0; i < Dk; ++i) mem += s[i * Dv + j] * k[i];
          delta[size_t(j)] = (v[j] - mem) * beta;
        }
        for (int64_t i = 0; i < Dk; ++i)
          for (int64_t j = 0; j < Dv; ++j) s[i * Dv + j] += k[i] * delta[size_t(j)];
        // o = S^T q
        float* out = o + (t * H + h) * Dv;
        for (int64_t j = 0; j < Dv; ++j) {
          float acc = 0.0f;
          for (int64_t i = 0; i < Dk; ++i) acc += s[i * Dv + j] * q[i];
          out[j] = acc;
        }
      }
  end_state_call(call);
  view_state(ctx, 1, call, {H, Dk, Dv});
  return {};
}

// Some value heads: v's, g's and beta's ranges of them, and the key heads
// they read (q's and k's, shared where processes outnumber them, as
// attention's kv heads); the state holds the same value heads.
Result<SplitAnswer> gated_delta_rule_split(const SplitQuery& q) {
  if (q.want.size() != 2 || q.want[0].axis != 1) return error("gated_delta_rule: only a part of its value heads is defined");
  const Part& want = q.want[0];
  const Part state{0, want.ranges};
  if (q.want[1].axis != kOpenPart && q.want[1] != state)
    return error("gated_delta_rule: its state is wanted in another part than its heads");
  const Shape &qs = q.in[0].shape, &vs = q.in[2].shape;
  ARCH_TRY(Part key_heads, grouped_heads(want, vs[1].n / qs[1].n, "gated_delta_rule"));
  SplitAnswer a{{key_heads, key_heads, want, want, want}, q.attrs};
  a.outputs = {want, state};
  return a;
}

}  // namespace

void define_gated_delta_rule(OpTable& t) {
  t.define(checked(OpDef{
               .name = "gated_delta_rule",
               .inputs = {"q", "k", "v", "g", "beta"},
               .attrs = {},
               .num_outputs = 2,
               .shape = gated_delta_rule_shape,
               .tolerance = {1e-4, 1e-6},
               .stateful = true,
               .sequences = true,
               .state_bytes = [](std::span<const TypedShape>, std::span<const TypedShape> out) -> int64_t {
                 const Shape& s = out[1].shape;
                 return s[0].n * s[1].n * s[2].n * int64_t(sizeof(float));
               },
               .fills = true,
               .split = gated_delta_rule_split,
               .doc = "gated_delta_rule(q [seq, KH, Dk], k [seq, KH, Dk], v [seq, H, Dv], g [seq, H], beta [seq, H]) "
                      "-> (o [seq, H, Dv], state [H, Dk, Dv]): per value head S = exp(g) S; S += k (beta (v - S^T k))^T; "
                      "o = S^T q, position by position, S kept per sequence",
           }),
           gated_delta_rule_kernel);
}

}  // namespace arch

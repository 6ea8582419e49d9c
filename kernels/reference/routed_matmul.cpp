// routed_matmul(x, w [E, N, K], idx [S, k] i32) -> [S, k, N]: each row's
// chosen experts only, out[s, j, :] = x_row(s, j) @ w[idx[s, j]]^T, where
// x is [S, K] (one row for all of a row's choices) or [S, k, K] (one row per
// choice). Never computes the experts a row did not choose. Accumulates in
// float32 like matmul.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> routed_matmul_shape(std::span<const TypedShape> in,
                                                           std::span<const bool>, const Attrs&) {
  const Shape& x = in[0].shape;
  const Shape& w = in[1].shape;
  const Shape& idx = in[2].shape;
  auto names = [&] { return "x " + shape_str(x) + ", w " + shape_str(w) + ", idx " + shape_str(idx); };
  if (w.size() != 3) return error("routed_matmul: w must be [experts, N, K], got " + names());
  if (idx.size() != 2) return error("routed_matmul: idx must be [S, k], got " + names());
  if (in[2].dtype != DType::I32)
    return error("routed_matmul: idx must be I32, got " + std::string(dtype_name(in[2].dtype)));
  if (x.size() != 2 && x.size() != 3)
    return error("routed_matmul: x must be [S, K] or [S, k, K], got " + names());
  if (x[0] != idx[0] || (x.size() == 3 && x[1] != idx[1]))
    return error("routed_matmul: x and idx disagree on " + std::string(x[0] != idx[0] ? "S" : "k") +
                 ", got " + names());
  if (x.back() != w[2])
    return error("routed_matmul: the last dim of x " + dim_str(x.back()) + " is not w's K " +
                 dim_str(w[2]) + ", got " + names());
  return one_output(Shape{idx[0], idx[1], w[1]});
}

static Status routed_matmul_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "routed_matmul", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "routed_matmul", 1));
  ARCH_TRY_STATUS(expect_i32(ctx, "routed_matmul", 2));
  const Tensor& X = ctx.inputs[0];    // [S, K] or [S, k, K]
  const Tensor& W = ctx.inputs[1];    // [E, N, K]
  const Tensor& Idx = ctx.inputs[2];  // [S, k]
  if (W.shape.size() != 3 || Idx.shape.size() != 2 || (X.shape.size() != 2 && X.shape.size() != 3) ||
      X.dim(0) != Idx.dim(0) || (X.shape.size() == 3 && X.dim(1) != Idx.dim(1)) || X.dim(-1) != W.dim(2))
    return kernel_error(ctx, "routed_matmul", "bad shapes x " + dims_str(X.shape) + ", w " +
                                                  dims_str(W.shape) + ", idx " + dims_str(Idx.shape));
  const int64_t S = Idx.dim(0), k = Idx.dim(1), E = W.dim(0), N = W.dim(1), K = W.dim(2);
  const bool per_choice = X.shape.size() == 3;
  ARCH_TRY_STATUS(expect_output(ctx, "routed_matmul", 0, Dims{S, k, N}));
  for (int64_t i = 0; i < S * k; ++i) {
    const int32_t e = Idx.i32()[i];
    if (e < 0 || e >= E)
      return kernel_error(ctx, "routed_matmul", "expert id " + std::to_string(e) + " (idx[" +
                                                    std::to_string(i / k) + ", " + std::to_string(i % k) +
                                                    "]) is out of range for " + std::to_string(E) + " experts");
  }
  float* out = ctx.outputs[0].f32();  // [S, k, N]
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < k; ++j) {
      // out[s, j, n] = sum_c x_row[c] * w[idx[s, j], n, c]
      const float* x = X.f32() + (per_choice ? s * k + j : s) * K;
      const float* w = W.f32() + int64_t(Idx.i32()[s * k + j]) * N * K;
      float* y = out + (s * k + j) * N;
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0.0f;
        for (int64_t c = 0; c < K; ++c) acc += x[c] * w[n * K + c];
        y[n] = acc;
      }
    }
  return {};
}

// Some of each expert's output rows (columns parallel), or a partial sum
// over some of K (rows parallel).
static Result<SplitAnswer> routed_matmul_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  const int xk = int(q.in[0].shape.size()) - 1;
  if (want.axis == kPartialSum) {
    SplitAnswer a{{Part{xk, want.ranges}, Part{2, want.ranges}, Part::whole()}, q.attrs};
    a.contraction = q.in[1].shape[2].concrete() ? q.in[1].shape[2].n : 0;
    return a;
  }
  // Some of each row's choices (DeepSeek's heads, each its own matrix):
  // those of x and idx, every expert's matrix (idx holds their numbers).
  if (want.axis == 1 && q.in[0].shape.size() == 3)
    return SplitAnswer{{want, Part::whole(), want}, q.attrs};
  if (want.axis != 2) return error("routed_matmul: only a part of its output features or of its choices is defined");
  return SplitAnswer{{Part::whole(), Part{1, want.ranges}, Part::whole()}, q.attrs};
}

void define_routed_matmul(OpTable& t) {
  t.define(checked(OpDef{
               .name = "routed_matmul",
               .inputs = {"x", "w", "idx"},
               .attrs = {},
               .shape = routed_matmul_shape,
               .tolerance = {1e-5, 1e-6},
               .split = routed_matmul_split,
               .doc = "routed_matmul(x [S, K] or [S, k, K], w [E, N, K], idx [S, k] i32) -> [S, k, N]: x_row(s, j) @ w[idx[s, j]]^T, only the chosen experts",
           }),
           routed_matmul_kernel);
}

}  // namespace arch

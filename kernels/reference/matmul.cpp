// matmul(a [..., K], b, add?) -> [..., N]: a @ b^T when transpose_b (b is a
// Linear weight [N, K]), else a @ b with b [K, N]; plus `add` when given, a
// bias [N] or a residual of the output's shape (the planner folds a
// following add into the matmul this way), then `activation` when given:
// a unary activation's name (the planner folds a following gelu, relu,
// ... this way). Accumulates in float32.
#include <algorithm>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> matmul_shape(std::span<const TypedShape> in,
                                                    std::span<const bool> present, const Attrs& attrs) {
  const Shape& a = in[0].shape;
  const Shape& b = in[1].shape;
  bool tb = attr_bool(attrs, "transpose_b", true);
  if (a.empty()) return error("matmul: a must have at least one dim, got []");
  if (b.size() != 2)
    return error("matmul: b must be 2-d (" + std::string(tb ? "[N, K]" : "[K, N]") + "), got " +
                 shape_str(b));
  Dim K = a.back();
  Dim bk = tb ? b[1] : b[0];
  Dim N = tb ? b[0] : b[1];
  if (K != bk)
    return error("matmul: a " + shape_str(a) + " and b" + (tb ? "^T " : " ") + shape_str(b) +
                 ": inner dims " + dim_str(K) + " and " + dim_str(bk) + " differ");
  Shape out(a.begin(), a.end() - 1);  // [..., N]
  out.push_back(N);
  if (in.size() > 2 && present.size() > 2 && present[2] && in[2].shape != Shape{N} && in[2].shape != out)
    return error("matmul: add " + shape_str(in[2].shape) + " is neither a bias [" + dim_str(N) +
                 "] nor the output's shape " + shape_str(out));
  const Attrs& act = attr_json(attrs, "activation");
  if (act.is_string() && !act.get<std::string>().empty() && !reference_activation(act.get<std::string>()))
    return error("matmul: activation '" + act.get<std::string>() + "' is not a unary activation");
  return one_output(out);
}

// out [M, N] += add: a bias [N] on every row, or a whole [M, N].
static Status add_addend(KernelContext& ctx, int64_t M, int64_t N) {
  if (ctx.inputs.size() < 3 || !ctx.inputs[2].data) return {};
  ARCH_TRY_STATUS(expect_f32(ctx, "matmul", 2));
  const Tensor& add = ctx.inputs[2];
  if (add.numel() != N && add.numel() != M * N)
    return kernel_error(ctx, "matmul", "add " + dims_str(add.shape) + " is neither a bias nor the output's shape");
  const int64_t stride = add.numel() == N ? 0 : N;
  float* out = ctx.outputs[0].f32();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) out[m * N + n] += add.f32()[m * stride + n];
  return {};
}

static Status matmul_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "matmul", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "matmul", 1));
  const Tensor& A = ctx.inputs[0];
  const Tensor& B = ctx.inputs[1];
  bool tb = attr_bool(ctx.attrs, "transpose_b", true);
  if (A.shape.empty() || B.shape.size() != 2)
    return kernel_error(ctx, "matmul", "bad shapes a " + dims_str(A.shape) + ", b " + dims_str(B.shape));
  int64_t K = A.dim(-1);
  int64_t N = tb ? B.dim(0) : B.dim(1);
  if ((tb ? B.dim(1) : B.dim(0)) != K)
    return kernel_error(ctx, "matmul", "inner dims differ: a " + dims_str(A.shape) + ", b " +
                                           dims_str(B.shape) + (tb ? " (transposed)" : ""));
  int64_t M = K ? A.numel() / K : 0;
  Dims want = A.shape;
  want.back() = N;
  ARCH_TRY_STATUS(expect_output(ctx, "matmul", 0, want));
  const float* a = A.f32();      // [M, K]
  const float* b = B.f32();      // [N, K] or [K, N]
  float* out = ctx.outputs[0].f32();  // [M, N], zero-filled
  if (tb) {
    // out[m, n] = sum_k a[m, k] * b[n, k]  (a dot product over contiguous K)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        float acc = 0.0f;
        for (int64_t k = 0; k < K; ++k) acc += a[m * K + k] * b[n * K + k];
        out[m * N + n] = acc;
      }
  } else {
    // out[m, :] += a[m, k] * b[k, :]  (an axpy over contiguous N)
    std::fill(out, out + M * N, 0.0f);
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) {
        float s = a[m * K + k];
        for (int64_t n = 0; n < N; ++n) out[m * N + n] += s * b[k * N + n];
      }
  }
  ARCH_TRY_STATUS(add_addend(ctx, M, N));
  // The activation the planner folded in, on the sum.
  const Attrs& act = attr_json(ctx.attrs, "activation");
  if (act.is_string() && !act.get<std::string>().empty()) {
    float (*f)(float) = reference_activation(act.get<std::string>());
    if (!f) return kernel_error(ctx, "matmul", "activation '" + act.get<std::string>() + "' is not a unary activation");
    for (int64_t i = 0; i < M * N; ++i) out[i] = f(out[i]);
  }
  return {};
}

// Some of the output's columns: those rows of b^T (columns parallel); some
// rows: those of a; or a partial sum over some of K: those columns of a
// and rows of b^T (rows parallel), with no addend, which every process
// would add.
static Result<SplitAnswer> matmul_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  const bool tb = attr_bool(q.attrs, "transpose_b", true);
  const bool has_add = q.present.size() > 2 && q.present[2];
  const int last = int(q.out[0].shape.size()) - 1;
  SplitAnswer a{{}, q.attrs};
  auto addend = [&](Part p) { a.inputs.push_back(has_add ? p : Part::whole()); };
  if (want.axis == kPartialSum) {
    a.contraction = q.in[0].shape.back().concrete() ? q.in[0].shape.back().n : 0;
    if (has_add) return error("matmul: its addend would be added on every process");
    a.inputs = {Part{int(q.in[0].shape.size()) - 1, want.ranges}, Part{tb ? 1 : 0, want.ranges}, Part::whole()};
    return a;
  }
  if (want.axis == last) {
    a.inputs = {Part::whole(), Part{tb ? 0 : 1, want.ranges}};
    addend(q.in.size() > 2 && q.in[2].shape.size() == 1 ? Part{0, want.ranges} : want);
    return a;
  }
  if (want.axis < 0) return error("matmul: no such part");
  a.inputs = {want, Part::whole()};
  addend(q.in.size() > 2 && q.in[2].shape.size() == 1 ? Part::whole() : want);
  return a;
}

void define_matmul(OpTable& t) {
  t.define(checked(OpDef{
               .name = "matmul",
               .inputs = {"a", "b", "add?"},
               .attrs = {{"transpose_b", AttrSpec::Bool, true}, {"activation", AttrSpec::Str, "", /*planner_only=*/true}},
               .shape = matmul_shape,
               .tolerance = {1e-5, 1e-6},
               .split = matmul_split,
               .doc = "matmul(a [..., K], b, add?) -> [..., N]: a @ b^T with b [N, K] (transpose_b), else a @ b with b "
                      "[K, N]; plus add (a bias [N] or the output's shape); then activation (a unary op's name, the planner's fold)",
           }),
           matmul_kernel);
}

}  // namespace arch

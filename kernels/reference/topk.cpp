// topk(x [..., N]) attr k -> (values [..., k] f32, indices [..., k] i32): the k
// largest entries of each last-dim row, largest first; equal values in index
// order (the lower index first); NaN counts as larger than any number.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> topk_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                  const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error("topk: x must have at least one dim, got []");
  const int64_t k = attr_int(attrs, "k", 0);
  if (k < 1) return error("topk: k must be >= 1, got " + std::to_string(k));
  if (x.back().concrete() && k > x.back().n)
    return error("topk: k = " + std::to_string(k) + " is more than the last dim of x " + shape_str(x));
  Shape out(x.begin(), x.end() - 1);  // [..., k]
  out.push_back(Dim::of(k));
  return std::vector<TypedShape>{{DType::F32, out}, {DType::I32, out}};
}

// a ranks before b: larger, NaN above every number.
static bool greater(float a, float b) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na || nb) return na && !nb;
  return a > b;
}

static Status topk_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "topk", 0));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.empty()) return kernel_error(ctx, "topk", "x must have at least one dim");
  const int64_t N = X.dim(-1);
  const int64_t k = attr_int(ctx.attrs, "k", 0);
  if (k < 1 || k > N)
    return kernel_error(ctx, "topk", "k = " + std::to_string(k) + " must be in 1.." + std::to_string(N) +
                                         " (x " + dims_str(X.shape) + ")");
  Dims want = X.shape;
  want.back() = k;
  ARCH_TRY_STATUS(expect_output(ctx, "topk", 0, want));
  ARCH_TRY_STATUS(expect_output(ctx, "topk", 1, want, DType::I32));
  const int64_t rows = X.numel() / N;
  std::vector<int32_t> order(static_cast<size_t>(N));
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = X.f32() + r * N;
    // order = argsort(-x, stable)[:k]
    std::iota(order.begin(), order.end(), 0);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [x](int32_t a, int32_t b) {
      if (greater(x[a], x[b])) return true;
      if (greater(x[b], x[a])) return false;
      return a < b;  // equal: the lower index first
    });
    float* values = ctx.outputs[0].f32() + r * k;
    int32_t* indices = ctx.outputs[1].i32() + r * k;
    for (int64_t j = 0; j < k; ++j) {
      indices[j] = order[j];
      values[j] = x[order[j]];
    }
  }
  return {};
}

void define_topk(OpTable& t) {
  t.define(checked(OpDef{
               .name = "topk",
               .inputs = {"x"},
               .attrs = {{"k", AttrSpec::Int, nullptr}},
               .num_outputs = 2,
               .shape = topk_shape,
               .tolerance = {1e-6, 1e-6},
               .split = split_all_but_last,
               .doc = "topk(x [..., N]) -> (values [..., k] f32, indices [..., k] i32): the k largest of each last-dim row, largest first, ties in index order",
           }),
           topk_kernel);
}

}  // namespace arch

// add, sub, mul, div (a, b) -> broadcast(a, b): elementwise with numpy
// broadcasting, right-aligned (equal dims, or one of them 1, or a 0-d scalar).
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> binary_shape(const std::string& op, std::span<const TypedShape> in) {
  ARCH_TRY(Shape out, broadcast(op, in[0].shape, in[1].shape));
  return one_output(out);
}

// Element strides of `d` seen from an output of rank `rank`: 0 where `d` is
// broadcast (missing or 1), so the same element is read again.
std::vector<int64_t> broadcast_strides(const Dims& d, size_t rank) {
  std::vector<int64_t> s(rank, 0);
  int64_t stride = 1;
  for (size_t i = 0; i < d.size(); ++i) {
    size_t k = d.size() - 1 - i;          // dim of d, from the right
    size_t o = rank - 1 - i;              // matching output dim
    s[o] = d[k] == 1 ? 0 : stride;
    stride *= d[k];
  }
  return s;
}

template <class F>
Status binary_kernel(KernelContext& ctx, const char* op, F f) {
  ARCH_TRY_STATUS(expect_f32(ctx, op, 0));
  ARCH_TRY_STATUS(expect_f32(ctx, op, 1));
  const Tensor& A = ctx.inputs[0];
  const Tensor& B = ctx.inputs[1];
  // The run-time shapes must broadcast to the output shape.
  auto shape = broadcast(op, shape_of(A.shape), shape_of(B.shape));
  if (!shape.ok()) return kernel_error(ctx, op, shape.error().message);
  Dims want = concretize(*shape, 0);
  ARCH_TRY_STATUS(expect_output(ctx, op, 0, want));
  size_t rank = want.size();
  std::vector<int64_t> sa = broadcast_strides(A.shape, rank);
  std::vector<int64_t> sb = broadcast_strides(B.shape, rank);
  const float* a = A.f32();
  const float* b = B.f32();
  float* out = ctx.outputs[0].f32();
  std::vector<int64_t> idx(rank, 0);  // the output index, counted like an odometer
  int64_t ia = 0, ib = 0;
  for (int64_t i = 0; i < numel(want); ++i) {
    // out[idx] = f(a[idx with broadcast dims at 0], b[likewise])
    out[i] = f(a[ia], b[ib]);
    for (size_t d = rank; d-- > 0;) {
      ia += sa[d];
      ib += sb[d];
      if (++idx[d] < want[d]) break;
      ia -= sa[d] * want[d];
      ib -= sb[d] * want[d];
      idx[d] = 0;
    }
  }
  return {};
}

void define_one(OpTable& t, const std::string& name, const std::string& doc, Kernel k) {
  t.define(checked(OpDef{
               .name = name,
               .inputs = {"a", "b"},
               .attrs = {},
               .shape = [name](std::span<const TypedShape> in, std::span<const bool>,
                               const Attrs&) { return binary_shape(name, in); },
               .tolerance = {1e-6, 1e-6},
               .doc = doc,
           }),
           std::move(k));
}

}  // namespace

void define_binary(OpTable& t) {
  define_one(t, "add", "add(a, b) -> broadcast(a, b): a + b", [](KernelContext& ctx) {
    return binary_kernel(ctx, "add", [](float x, float y) { return x + y; });
  });
  define_one(t, "sub", "sub(a, b) -> broadcast(a, b): a - b", [](KernelContext& ctx) {
    return binary_kernel(ctx, "sub", [](float x, float y) { return x - y; });
  });
  define_one(t, "mul", "mul(a, b) -> broadcast(a, b): a * b", [](KernelContext& ctx) {
    return binary_kernel(ctx, "mul", [](float x, float y) { return x * y; });
  });
  define_one(t, "div", "div(a, b) -> broadcast(a, b): a / b", [](KernelContext& ctx) {
    return binary_kernel(ctx, "div", [](float x, float y) { return x / y; });
  });
}

}  // namespace arch

// add, sub, mul, div (a, b) -> broadcast(a, b): elementwise with numpy
// broadcasting, right-aligned (equal dims, or one of them 1, or a 0-d scalar).
// Float32, except that add and sub also take two int32 inputs and give int32
// (position / token-type arithmetic; wrapping on overflow, as torch's int32).
// One int32 input with a float one is refused: cast() one of them first.
#include <cstdint>
#include <type_traits>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

// Whether op takes two int32 inputs (giving int32).
bool takes_i32(const std::string& op) { return op == "add" || op == "sub"; }

Result<std::vector<TypedShape>> binary_shape(const std::string& op, std::span<const TypedShape> in) {
  const bool ia = in[0].dtype == DType::I32, ib = in[1].dtype == DType::I32;
  if (ia != ib)
    return error(op + ": a is " + std::string(dtype_name(in[0].dtype)) + " and b is " +
                 std::string(dtype_name(in[1].dtype)) + ": int32 only combines with int32 (cast one of them)");
  if (ia && !takes_i32(op)) return error(op + ": int32 inputs are taken only by add and sub (cast them to f32)");
  ARCH_TRY(Shape out, broadcast(op, in[0].shape, in[1].shape));
  return one_output(out, ia ? DType::I32 : DType::F32);
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

// out = f(a, b) elementwise, T float or int32_t: both inputs T, the output T.
template <class T, class F>
Status binary_kernel(KernelContext& ctx, const char* op, F f) {
  const DType t = std::is_same_v<T, float> ? DType::F32 : DType::I32;
  ARCH_TRY_STATUS(expect_input(ctx, op, 0, t));
  ARCH_TRY_STATUS(expect_input(ctx, op, 1, t));
  const Tensor& A = ctx.inputs[0];
  const Tensor& B = ctx.inputs[1];
  // The run-time shapes must broadcast to the output shape.
  auto shape = broadcast(op, shape_of(A.shape), shape_of(B.shape));
  if (!shape.ok()) return kernel_error(ctx, op, shape.error().message);
  Dims want = concretize(*shape, 0);
  ARCH_TRY_STATUS(expect_output(ctx, op, 0, want, t));
  size_t rank = want.size();
  std::vector<int64_t> sa = broadcast_strides(A.shape, rank);
  std::vector<int64_t> sb = broadcast_strides(B.shape, rank);
  const T* a = static_cast<const T*>(A.data);
  const T* b = static_cast<const T*>(B.data);
  T* out = static_cast<T*>(ctx.outputs[0].data);
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
               .split = split_elementwise,
               .doc = doc,
           }),
           std::move(k));
}

// int32 a + b and a - b wrapping modulo 2^32 (computed unsigned: no overflow UB).
int32_t wrap(uint32_t v) { return int32_t(v); }

// Both inputs int32 (the shape rule allows it): the int32 kernel, else float32.
bool i32_inputs(const KernelContext& ctx) {
  return ctx.inputs.size() == 2 && ctx.inputs[0].dtype == DType::I32 && ctx.inputs[1].dtype == DType::I32;
}

}  // namespace

void define_binary(OpTable& t) {
  define_one(t, "add", "add(a, b) -> broadcast(a, b): a + b (two f32, or two i32 giving i32)", [](KernelContext& ctx) {
    if (i32_inputs(ctx))
      return binary_kernel<int32_t>(ctx, "add", [](int32_t x, int32_t y) { return wrap(uint32_t(x) + uint32_t(y)); });
    return binary_kernel<float>(ctx, "add", [](float x, float y) { return x + y; });
  });
  define_one(t, "sub", "sub(a, b) -> broadcast(a, b): a - b (two f32, or two i32 giving i32)", [](KernelContext& ctx) {
    if (i32_inputs(ctx))
      return binary_kernel<int32_t>(ctx, "sub", [](int32_t x, int32_t y) { return wrap(uint32_t(x) - uint32_t(y)); });
    return binary_kernel<float>(ctx, "sub", [](float x, float y) { return x - y; });
  });
  define_one(t, "mul", "mul(a, b) -> broadcast(a, b): a * b", [](KernelContext& ctx) {
    return binary_kernel<float>(ctx, "mul", [](float x, float y) { return x * y; });
  });
  define_one(t, "div", "div(a, b) -> broadcast(a, b): a / b", [](KernelContext& ctx) {
    return binary_kernel<float>(ctx, "div", [](float x, float y) { return x / y; });
  });
}

}  // namespace arch

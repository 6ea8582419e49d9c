// The cpu backend's elementwise ops: the unary activations (silu, gelu,
// gelu_tanh, quick_gelu, relu, sigmoid, tanh, exp), leaky_relu, glu with those, and
// float32 add / mul / div (by a tensor that repeats within the other), with Highway (one pass over memory, vectorised
// exp/tanh/erf) and OpenMP over large tensors. Each formula is the
// reference's, evaluated in the same order; exp and tanh come from Highway's math library (a few ulp), erf from
// our own fit (below), so results agree with the reference within the ops'
// tolerance, not bit for bit.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/reference/shape_rules.h"

// Which function a call applies (an int across the dispatch boundary).
// Guarded: foreach_target includes this file once per target.
#ifndef ARCH_KERNELS_CPU_ACTIVATIONS_OPS
#define ARCH_KERNELS_CPU_ACTIVATIONS_OPS
namespace arch::cpu_elementwise {
enum Unary : int { kSilu, kGelu, kGeluTanh, kQuickGelu, kRelu, kSigmoid, kTanh, kExp };
enum Binary : int { kAdd, kMul, kDiv };
}  // namespace arch::cpu_elementwise
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/activations_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace arch {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using namespace cpu_elementwise;

// Highway's Exp is valid up to +104 and overflows to inf past ~88.7, as
// std::exp does; clamping at 100 keeps larger inputs (and +inf) giving inf.
template <class D, class V>
HWY_INLINE V ExpClamped(D d, V x) {
  return hn::Exp(d, hn::Min(x, hn::Set(d, 100.0f)));
}

// 1 / (1 + exp(-x)), as the reference writes sigmoid.
template <class D, class V>
HWY_INLINE V Sigmoid(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  return hn::Div(one, hn::Add(one, ExpClamped(d, hn::Neg(x))));
}

// erf(x) to about 2 ulp (max abs error 1.1e-7 against long double erf),
// Highway 1.0.3 having none. Coefficients are our own fit (interpolation at
// Chebyshev nodes, long double, rounded to float):
//   |x| <= 1:        erf(x) = x * P(x^2)
//   1 < |x| < 3.92:  erf(x) = 1 - exp(-x^2) * Q(1/x)  (erfc(x) e^{x^2} is smooth in 1/x)
//   |x| >= 3.92:     erf(x) = 1 in float32
template <class D, class V>
HWY_INLINE V Erf(D d, V x) {
  const V z = hn::Abs(x);
  const V u = hn::Mul(z, z);
  V p = hn::Set(d, -0.000564805989f);
  p = hn::MulAdd(p, u, hn::Set(d, 0.00492176181f));
  p = hn::MulAdd(p, u, hn::Set(d, -0.0267150551f));
  p = hn::MulAdd(p, u, hn::Set(d, 0.112803169f));
  p = hn::MulAdd(p, u, hn::Set(d, -0.376123428f));
  p = hn::MulAdd(p, u, hn::Set(d, 1.12837911f));
  const V small = hn::Mul(z, p);

  const V zc = hn::Min(hn::Max(z, hn::Set(d, 1.0f)), hn::Set(d, 3.92f));
  const V t = hn::Div(hn::Set(d, 1.0f), zc);
  V q = hn::Set(d, -0.0198394675f);
  q = hn::MulAdd(q, t, hn::Set(d, 0.129573569f));
  q = hn::MulAdd(q, t, hn::Set(d, -0.370698929f));
  q = hn::MulAdd(q, t, hn::Set(d, 0.592154086f));
  q = hn::MulAdd(q, t, hn::Set(d, -0.515288591f));
  q = hn::MulAdd(q, t, hn::Set(d, 0.0540966652f));
  q = hn::MulAdd(q, t, hn::Set(d, 0.557197154f));
  q = hn::MulAdd(q, t, hn::Set(d, 0.000389101653f));
  const V big = hn::NegMulAdd(hn::Exp(d, hn::Neg(hn::Mul(zc, zc))), q, hn::Set(d, 1.0f));

  const V r = hn::IfThenElse(hn::Le(z, hn::Set(d, 1.0f)), small, big);
  return hn::CopySign(r, x);  // erf is odd
}

// f(x) for one of the Unary ops, OP a template argument so each loop is
// specialised (no switch per vector).
template <int OP, class D, class V>
HWY_INLINE V Apply(D d, V x) {
  const V half = hn::Set(d, 0.5f);
  const V one = hn::Set(d, 1.0f);
  if constexpr (OP == kSilu) {  // x / (1 + exp(-x))
    return hn::Div(x, hn::Add(one, ExpClamped(d, hn::Neg(x))));
  } else if constexpr (OP == kGelu) {  // 0.5 x (1 + erf(x / sqrt 2))
    return hn::Mul(hn::Mul(half, x), hn::Add(one, Erf(d, hn::Mul(x, hn::Set(d, 0.70710678118654752f)))));
  } else if constexpr (OP == kGeluTanh) {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
    const V x3 = hn::Mul(hn::Mul(x, x), x);
    const V inner = hn::Mul(hn::Set(d, 0.79788456080286536f), hn::MulAdd(hn::Set(d, 0.044715f), x3, x));
    return hn::Mul(hn::Mul(half, x), hn::Add(one, hn::Tanh(d, inner)));
  } else if constexpr (OP == kQuickGelu) {  // x * sigmoid(1.702 x)
    return hn::Mul(x, Sigmoid(d, hn::Mul(hn::Set(d, 1.702f), x)));
  } else if constexpr (OP == kRelu) {  // x > 0 ? x : 0, as written (NaN and -0 give +0)
    return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x);
  } else if constexpr (OP == kSigmoid) {
    return Sigmoid(d, x);
  } else if constexpr (OP == kTanh) {
    return hn::Tanh(d, x);
  } else {  // kExp; NaN stays NaN (Min would turn it into 100)
    return hn::IfThenElse(hn::Eq(x, x), ExpClamped(d, x), x);
  }
}

// y[i] = f(x[i]) for i in [0, n). The tail goes through a padded buffer so
// every element sees the same vector code. x may be y (in place: each
// vector is loaded before it is stored).
template <int OP>
HWY_INLINE void UnaryLoop(const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Apply<OP>(d, hn::LoadU(d, x + i)), d, y + i);
  if (i == n) return;
  HWY_ALIGN float buf[HWY_MAX_BYTES / sizeof(float)] = {};
  std::memcpy(buf, x + i, (n - i) * sizeof(float));
  hn::Store(Apply<OP>(d, hn::Load(d, buf)), d, buf);
  std::memcpy(y + i, buf, (n - i) * sizeof(float));
}

// y = x where x >= 0, else slope x (leaky_relu; NaN takes the second arm,
// slope NaN = NaN, as the reference's comparison does).
void LeakyReluRange(float slope, const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto s = hn::Set(d, slope), zero = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto v = hn::LoadU(d, x + i);
    hn::StoreU(hn::IfThenElse(hn::Ge(v, zero), v, hn::Mul(v, s)), d, y + i);
  }
  for (; i < n; ++i) y[i] = x[i] >= 0.0f ? x[i] : x[i] * slope;
}

void UnaryRange(int op, const float* x, float* y, size_t n) {
  switch (op) {
    case kSilu: return UnaryLoop<kSilu>(x, y, n);
    case kGelu: return UnaryLoop<kGelu>(x, y, n);
    case kGeluTanh: return UnaryLoop<kGeluTanh>(x, y, n);
    case kQuickGelu: return UnaryLoop<kQuickGelu>(x, y, n);
    case kRelu: return UnaryLoop<kRelu>(x, y, n);
    case kSigmoid: return UnaryLoop<kSigmoid>(x, y, n);
    case kTanh: return UnaryLoop<kTanh>(x, y, n);
    default: return UnaryLoop<kExp>(x, y, n);
  }
}

// y[i] = f(gate[i]) * up[i] for i in [0, n): a gated linear unit's row.
template <int OP>
HWY_INLINE void GluLoop(const float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, float* HWY_RESTRICT y,
                        size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(Apply<OP>(d, hn::LoadU(d, gate + i)), hn::LoadU(d, up + i)), d, y + i);
  if (i == n) return;
  HWY_ALIGN float g[HWY_MAX_BYTES / sizeof(float)] = {}, u[HWY_MAX_BYTES / sizeof(float)] = {};
  std::memcpy(g, gate + i, (n - i) * sizeof(float));
  std::memcpy(u, up + i, (n - i) * sizeof(float));
  hn::Store(hn::Mul(Apply<OP>(d, hn::Load(d, g)), hn::Load(d, u)), d, g);
  std::memcpy(y + i, g, (n - i) * sizeof(float));
}

void GluRange(int op, const float* HWY_RESTRICT gate, const float* HWY_RESTRICT up, float* HWY_RESTRICT y,
              size_t n) {
  switch (op) {
    case kSilu: return GluLoop<kSilu>(gate, up, y, n);
    case kGelu: return GluLoop<kGelu>(gate, up, y, n);
    case kGeluTanh: return GluLoop<kGeluTanh>(gate, up, y, n);
    case kQuickGelu: return GluLoop<kQuickGelu>(gate, up, y, n);
    case kRelu: return GluLoop<kRelu>(gate, up, y, n);
    case kSigmoid: return GluLoop<kSigmoid>(gate, up, y, n);
    case kTanh: return GluLoop<kTanh>(gate, up, y, n);
    default: return GluLoop<kExp>(gate, up, y, n);
  }
}

template <class D, class V>
HWY_INLINE V Combine(int op, V a, V b) {
  return op == kAdd ? hn::Add(a, b) : op == kMul ? hn::Mul(a, b) : hn::Div(a, b);
}

inline float combine(int op, float a, float b) { return op == kAdd ? a + b : op == kMul ? a * b : a / b; }

// y[i] = a[i] op b[i % nb] for i in [0, n), n a multiple of nb (b repeats
// along the leading dims: a bias, a per-feature scale, a scalar when nb = 1).
void BinaryRange(int op, const float* HWY_RESTRICT a, const float* HWY_RESTRICT b, size_t nb,
                 float* HWY_RESTRICT y, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  if (nb == 1) {
    const auto vb = hn::Set(d, b[0]);
    size_t i = 0;
    for (; i + N <= n; i += N) hn::StoreU(Combine<decltype(d)>(op, hn::LoadU(d, a + i), vb), d, y + i);
    for (; i < n; ++i) y[i] = combine(op, a[i], b[0]);
    return;
  }
  for (size_t row = 0; row < n; row += nb) {
    size_t i = 0;
    for (; i + N <= nb; i += N)
      hn::StoreU(Combine<decltype(d)>(op, hn::LoadU(d, a + row + i), hn::LoadU(d, b + i)), d, y + row + i);
    for (; i < nb; ++i) y[row + i] = combine(op, a[row + i], b[i]);
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace arch
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace arch {

HWY_EXPORT(UnaryRange);
HWY_EXPORT(LeakyReluRange);
HWY_EXPORT(BinaryRange);
HWY_EXPORT(GluRange);

namespace {

using namespace cpu_elementwise;

// The ops the vector code has, by name.
const std::pair<const char*, int> kUnaryOps[] = {
    {"silu", kSilu}, {"gelu", kGelu},       {"gelu_tanh", kGeluTanh}, {"quick_gelu", kQuickGelu},
    {"relu", kRelu}, {"sigmoid", kSigmoid}, {"tanh", kTanh},          {"exp", kExp},
};

int unary_of(const std::string& op) {
  for (auto [name, which] : kUnaryOps)
    if (op == name) return which;
  return -1;
}

// Below these many elements one thread beats waking the pool (an add is
// memory-bound; an activation's exp / tanh / erf costs more per element);
// above, the pool takes chunks of kChunk elements.
constexpr int64_t kParallelUnary = 1 << 16;
constexpr int64_t kParallelBinary = 1 << 17;
constexpr int64_t kChunk = 1 << 14;

// f over an F32 x into an F32 output of its shape, in chunks of kChunk
// elements, in parallel above `parallel_above`; anything else is the
// reference kernel's (for its very error message).
using RangeFn = void (*)(const Attrs& attrs, int which, const float* x, float* y, size_t n);

Kernel elementwise_kernel(RangeFn range, int which, int64_t parallel_above, Kernel reference) {
  return [range, which, parallel_above, reference](KernelContext& ctx) -> Status {
    if (ctx.inputs.size() != 1 || ctx.inputs[0].dtype != DType::F32 || !ctx.inputs[0].data ||
        ctx.outputs.size() != 1 || ctx.outputs[0].dtype != DType::F32 ||
        ctx.outputs[0].shape != ctx.inputs[0].shape)
      return reference(ctx);
    const float* x = ctx.inputs[0].f32();
    float* y = ctx.outputs[0].f32();
    const int64_t n = ctx.inputs[0].numel();
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    parallel_for(chunks, n >= parallel_above, [&](int64_t c) {
      const int64_t lo = c * kChunk, hi = std::min(n, lo + kChunk);
      range(ctx.attrs, which, x + lo, y + lo, size_t(hi - lo));
    });
    return {};
  };
}

void unary_range(const Attrs&, int which, const float* x, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(UnaryRange)(which, x, y, n);
}

// leaky_relu: memory-bound like an add.
void leaky_relu_range(const Attrs& attrs, int, const float* x, float* y, size_t n) {
  HWY_DYNAMIC_DISPATCH(LeakyReluRange)(float(attr_float(attrs, "slope", 0.01)), x, y, n);
}

// Whether `small` repeats along the leading dims of `big`: its dims, leading
// 1s dropped, are big's trailing dims (so broadcast(big, small) is big).
bool repeats_within(const Dims& big, const Dims& small) {
  size_t skip = 0;
  while (skip < small.size() && small[skip] == 1) ++skip;
  const size_t k = small.size() - skip;
  if (small.size() > big.size()) return false;
  return std::equal(small.begin() + skip, small.end(), big.end() - k);
}

// add / mul of two F32 tensors where one equals the output's shape and the
// other repeats within it (same shape, a bias [D], a scalar). Every other
// case (int32 add, general broadcasting, errors) is the reference kernel's.
Kernel binary_kernel(int which, Kernel reference) {
  return [which, reference](KernelContext& ctx) -> Status {
    if (ctx.inputs.size() != 2 || ctx.outputs.size() != 1) return reference(ctx);
    const Tensor* a = &ctx.inputs[0];
    const Tensor* b = &ctx.inputs[1];
    Tensor& out = ctx.outputs[0];
    if (!a->data || !b->data || a->dtype != DType::F32 || b->dtype != DType::F32 || out.dtype != DType::F32)
      return reference(ctx);
    if (out.shape != a->shape && which != kDiv) std::swap(a, b);  // add and mul commute exactly in float
    if (out.shape != a->shape) return reference(ctx);
    const int64_t n = a->numel(), nb = b->numel();
    if (b->numel() != 1 && !repeats_within(a->shape, b->shape)) return reference(ctx);
    if (n == 0) return {};
    // Chunks of kChunk elements (b the same shape or a scalar), else of
    // whole rows of b.
    const bool elementwise = nb == n || nb == 1;
    const int64_t row = elementwise ? kChunk : std::max<int64_t>(nb, kChunk / nb * nb);
    const int64_t chunks = (n + row - 1) / row;
    const float* pa = a->f32();
    const float* pb = b->f32();
    float* py = out.f32();
    parallel_for(chunks, n >= kParallelBinary, [&](int64_t c) {
      const int64_t lo = c * row, hi = std::min(n, lo + row);
      if (nb == n)
        HWY_DYNAMIC_DISPATCH(BinaryRange)(which, pa + lo, pb + lo, size_t(hi - lo), py + lo, size_t(hi - lo));
      else
        HWY_DYNAMIC_DISPATCH(BinaryRange)(which, pa + lo, pb, size_t(nb), py + lo, size_t(hi - lo));
    });
    return {};
  };
}

// glu on F32 gate and up with an activation the vector code has; anything
// else (sqrt, neg; errors) is the reference kernel's. Rows split across threads.
Kernel glu_kernel(Kernel reference) {
  return [reference](KernelContext& ctx) -> Status {
    const Attrs& act = attr_json(ctx.attrs, "act");
    const int which = act.is_string() ? unary_of(act.get<std::string>()) : -1;
    if (which < 0 || ctx.inputs.size() != 2 || ctx.outputs.size() != 1) return reference(ctx);
    const Tensor& G = ctx.inputs[0];
    const Tensor& U = ctx.inputs[1];
    Tensor& out = ctx.outputs[0];
    if (!G.data || !U.data || G.dtype != DType::F32 || U.dtype != DType::F32 || out.dtype != DType::F32 ||
        G.shape.empty() || U.shape.empty() || out.shape.empty())
      return reference(ctx);
    const int64_t width = attr_int(ctx.attrs, "width", 0), gs = attr_int(ctx.attrs, "gate_start", 0),
                  us = attr_int(ctx.attrs, "up_start", 0);
    const int64_t gn = G.shape.back(), un = U.shape.back(), rows = out.numel() / std::max<int64_t>(width, 1);
    if (out.shape.back() != width || gs < 0 || us < 0 || gs + width > gn || us + width > un ||
        G.numel() != rows * gn || U.numel() != rows * un)
      return reference(ctx);
    const float* g = G.f32();
    const float* u = U.f32();
    float* y = out.f32();
    parallel_for(rows, rows * width >= kParallelUnary, [&](int64_t r) {
      HWY_DYNAMIC_DISPATCH(GluRange)(which, g + r * gn + gs, u + r * un + us, y + r * width, size_t(width));
    });
    return {};
  };
}

// The reference kernel of `op`, copied out of the table (registered before
// any backend's), for the cases the fast kernels hand back.
Kernel reference_of(const OpTable& t, const char* op) {
  const Kernel* k = t.kernel(op, "reference");
  if (!k) throw std::logic_error(std::string("cpu kernels: no reference kernel for ") + op);
  return *k;
}

}  // namespace

bool apply_activation(const std::string& op, float* x, int64_t n) {
  const int which = unary_of(op);
  if (which < 0 || which == kExp) return false;
  parallel_for((n + kChunk - 1) / kChunk, n >= kParallelUnary, [&](int64_t c) {
    const int64_t i = c * kChunk;
    HWY_DYNAMIC_DISPATCH(UnaryRange)(which, x + i, x + i, size_t(std::min(kChunk, n - i)));
  });
  return true;
}

void register_cpu_activations(OpTable& t) {
  // Every path (its reference fallbacks too) writes each output element:
  // the outputs need no zeroing first.
  for (auto [op, which] : kUnaryOps)
    t.add_kernel(op, "cpu", elementwise_kernel(unary_range, which, kParallelUnary, reference_of(t, op)), nullptr,
                 nullptr, /*fills=*/true);
  t.add_kernel("glu", "cpu", glu_kernel(reference_of(t, "glu")), nullptr, nullptr, /*fills=*/true);
  t.add_kernel("leaky_relu", "cpu", elementwise_kernel(leaky_relu_range, 0, kParallelBinary, reference_of(t, "leaky_relu")),
               nullptr, nullptr, /*fills=*/true);
  t.add_kernel("add", "cpu", binary_kernel(kAdd, reference_of(t, "add")), nullptr, nullptr, /*fills=*/true);
  t.add_kernel("mul", "cpu", binary_kernel(kMul, reference_of(t, "mul")), nullptr, nullptr, /*fills=*/true);
  t.add_kernel("div", "cpu", binary_kernel(kDiv, reference_of(t, "div")), nullptr, nullptr, /*fills=*/true);
}

}  // namespace arch
#endif  // HWY_ONCE

// The cpu backend's 1-D convolutions, conv1d and conv_transpose1d, through
// oneDNN's convolution and deconvolution primitives on one sequence (batch
// 1): stride, padding, dilation and groups as the ops define them. oneDNN
// picks its layouts (blocked channels for its direct kernels); the input,
// the weight and the output are reordered to and from them on every call,
// each one pass over memory against K passes of arithmetic, so the tensors
// every other op reads stay [C, L]. Whisper's stem and HiFi-GAN's vocoder
// are all of these. F32 tensors only (with --bf16-activations rounded to
// bf16 for the products); the rest goes to the reference, which also
// words every error.
#include <omp.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_scratchpad.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

struct ConvShape {
  // pad_r: a transposed conv's padding less its output_padding. row: x's
  // row stride (L, or more where the call reads a window of its columns).
  int64_t C, L, O, K, stride, pad_l, pad_r, dilation, groups, row;
  bool transposed, bias;
  bool bf16 = false;  // --bf16-activations where the CPU has bf16 dot products: bf16 products, f32 sums
  bool leaky = false;  // the planner's folded leaky_relu, as oneDNN's eltwise post-op
  float slope = 0;
  auto key() const {
    return std::make_tuple(C, L, O, K, stride, pad_l, pad_r, dilation, groups, row, transposed, bias, bf16, leaky,
                           slope, omp_get_max_threads());
  }
};

// A primitive and the memory descriptions it was made for: the plain ones
// the tensors have and the ones the primitive reads and writes.
struct ConvPrimitive {
  dnnl::primitive prim;
  dnnl::memory::desc src_plain, wei_plain, dst_plain, bias;
  dnnl::memory::desc src, wei, dst, scratch;
};

struct ConvPrimitives {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex lock;
  std::map<decltype(std::declval<ConvShape>().key()), ConvPrimitive> cache;
};

constexpr size_t kMostPrimitives = 64;

ConvPrimitives& primitives() {
  static ConvPrimitives p;
  return p;
}

ConvPrimitive make_primitive(const ConvShape& s, int64_t Lo, const dnnl::engine& engine) {
  ConvPrimitive p;
  const int64_t G = s.groups;
  p.src_plain = dnnl::memory::desc({1, s.C, s.L}, dt::f32, dnnl::memory::dims{s.C * s.row, s.row, 1});
  p.dst_plain = dnnl::memory::desc({1, s.O, Lo}, dt::f32, tag::ncw);
  p.bias = dnnl::memory::desc({s.O}, dt::f32, tag::a);
  // conv1d's weight [O, C/G, K] is oneDNN's (g)oiw as stored.
  // conv_transpose1d's [C, O/G, K] (torch's in, out order) is described
  // with strides: oneDNN's (g)oiw with o and i swapped.
  if (!s.transposed) {
    p.wei_plain = G == 1 ? dnnl::memory::desc({s.O, s.C, s.K}, dt::f32, tag::oiw)
                         : dnnl::memory::desc({G, s.O / G, s.C / G, s.K}, dt::f32, tag::goiw);
  } else {
    const int64_t og = s.O / G, cg = s.C / G;  // per group: out, in
    p.wei_plain = G == 1 ? dnnl::memory::desc({s.O, s.C, s.K}, dt::f32, dnnl::memory::dims{s.K, s.O * s.K, 1})
                         : dnnl::memory::desc({G, og, cg, s.K}, dt::f32,
                                              dnnl::memory::dims{cg * og * s.K, s.K, og * s.K, 1});
  }
  // With bf16 allowed (where the CPU multiplies bf16 natively), the input
  // and weight are rounded to bf16 as they are reordered into the
  // primitive's layout, and the sums and output stay f32: oneDNN 2.6's
  // fpmath_mode left its f32 kernels as they were (same speed measured).
  const dt mul = s.bf16 ? dt::bf16 : dt::f32;
  const dnnl::memory::desc src_any({1, s.C, s.L}, mul, tag::any), dst_any({1, s.O, Lo}, dt::f32, tag::any);
  const dnnl::memory::desc wei_any = G == 1 ? dnnl::memory::desc({s.O, s.C, s.K}, mul, tag::any)
                                            : dnnl::memory::desc({G, s.O / G, s.C / G, s.K}, mul, tag::any);
  const dnnl::memory::desc no_bias;
  const dnnl::memory::dims strides{s.stride}, dilates{s.dilation - 1}, pad_l{s.pad_l}, pad_r{s.pad_r};
  dnnl::primitive_attr attr;
  if (s.leaky) {  // relu with a negative slope alpha is leaky_relu
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, s.slope, 0.0f);
    attr.set_post_ops(ops);
  }
  // The two primitives are made alike: a descriptor, its chosen layouts.
  auto make = [&](auto kind, dnnl::algorithm alg) {
    using Primitive = decltype(kind);
    typename Primitive::primitive_desc pd(
        typename Primitive::desc(dnnl::prop_kind::forward_inference, alg, src_any, wei_any, s.bias ? p.bias : no_bias,
                                 dst_any, strides, dilates, pad_l, pad_r),
        user_scratchpad(attr), engine);
    p.src = pd.src_desc(), p.wei = pd.weights_desc(), p.dst = pd.dst_desc(), p.scratch = pd.scratchpad_desc();
    p.prim = Primitive(pd);
  };
  if (!s.transposed) make(dnnl::convolution_forward(), dnnl::algorithm::convolution_direct);
  else make(dnnl::deconvolution_forward(), dnnl::algorithm::deconvolution_direct);
  return p;
}

// One call: what is not already in the primitive's layout reordered into
// scratch (kept per thread across calls), the primitive, the output
// [O, Lo] back into `out`.
Status run_conv(KernelContext& ctx, const ConvShape& s, int64_t Lo, const float* x, const float* w,
                const float* bias, float* out, const char* op) {
  ConvPrimitives& cp = primitives();
  try {
    std::lock_guard<std::mutex> guard(cp.lock);
    auto it = cp.cache.find(s.key());
    if (it == cp.cache.end()) {
      // A primitive holds memory that grows with its length, and a voice
      // makes some fifty at new lengths for every piece of text it speaks:
      // kept by the hundred, they grew memory with the whole text, not with
      // its longest piece. About one piece's worth is kept.
      if (cp.cache.size() >= kMostPrimitives) cp.cache.clear();
      it = cp.cache.emplace(s.key(), make_primitive(s, Lo, cp.engine)).first;
    }
    ConvPrimitive& p = it->second;
    const dnnl::engine& e = cp.engine;
    dnnl::stream stream(e);
    thread_local dnnl::memory src_buf, wei_buf, dst_buf;
    dnnl::memory src = in_layout(p.src_plain, p.src, x, src_buf, e, stream);
    dnnl::memory wei = in_layout(p.wei_plain, p.wei, w, wei_buf, e, stream);
    dnnl::memory out_plain(p.dst_plain, e, out);
    dnnl::memory dst = p.dst == p.dst_plain ? out_plain : scratch_memory(dst_buf, p.dst, e);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(p.scratch, e));
    if (s.bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(p.bias, e, const_cast<float*>(bias)));
    p.prim.execute(stream, args);
    if (!(p.dst == p.dst_plain)) dnnl::reorder(dst, out_plain).execute(stream, dst, out_plain);
    stream.wait();
  } catch (const dnnl::error& err) {
    return kernel_error(ctx, op, std::string("oneDNN: ") + err.what());
  }
  return {};
}

// The call's shape, where this kernel takes it: f32 [C, L] and a 3-d
// weight whose dims fit, the output allocated as the op's shape rule made
// it; else nullopt (the reference runs, and words what is wrong).
std::optional<std::pair<ConvShape, int64_t>> shape_of_call(const KernelContext& ctx, bool transposed) {
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1) return std::nullopt;
  const Tensor &X = ctx.inputs[0], &W = ctx.inputs[1];
  const bool bias = ctx.inputs.size() > 2 && ctx.inputs[2].data;
  if (!X.data || !W.data || X.dtype != DType::F32 || W.dtype != DType::F32 || X.shape.size() != 2 ||
      W.shape.size() != 3 || (bias && ctx.inputs[2].dtype != DType::F32))
    return std::nullopt;
  ConvShape s{};
  s.transposed = transposed, s.bias = bias, s.bf16 = ctx.options && ctx.options->bf16_activations && onednn_has_bf16();
  s.stride = attr_int(ctx.attrs, "stride", 1);
  const int64_t padding = attr_int(ctx.attrs, "padding", 0);
  s.dilation = attr_int(ctx.attrs, "dilation", 1), s.groups = attr_int(ctx.attrs, "groups", 1);
  const int64_t output_padding = transposed ? attr_int(ctx.attrs, "output_padding", 0) : 0;
  s.pad_l = padding, s.pad_r = padding - output_padding;
  if (!transposed) {
    const std::string act = attr_str(ctx.attrs, "activation", "");
    if (!act.empty() && act != "leaky_relu") return std::nullopt;
    s.leaky = act == "leaky_relu";
    s.slope = s.leaky ? float(attr_float(ctx.attrs, "activation_slope", 0.01)) : 0.0f;
  }
  s.C = X.dim(0), s.L = X.dim(1), s.K = W.dim(2), s.row = s.L;
  if (s.stride < 1 || s.dilation < 1 || padding < 0 || s.groups < 1 || s.K < 1 || s.L < 1 || s.C % s.groups)
    return std::nullopt;
  if (!transposed) {
    s.O = W.dim(0);
    if (W.dim(1) * s.groups != s.C || s.O % s.groups) return std::nullopt;
  } else {
    // pad_r = padding - output_padding must not go negative for oneDNN.
    if (W.dim(0) != s.C || output_padding < 0 || output_padding > padding) return std::nullopt;
    s.O = W.dim(1) * s.groups;
  }
  const int64_t span = s.dilation * (s.K - 1) + 1;
  const int64_t Lo = transposed ? (s.L - 1) * s.stride - 2 * padding + span + output_padding
                                : (s.L + 2 * padding - span) / s.stride + 1;
  if (Lo < 1 || (!transposed && s.L + 2 * padding < span)) return std::nullopt;
  const Tensor& out = ctx.outputs[0];
  if (out.dtype != DType::F32 || out.shape != Dims{s.O, Lo} || (bias && ctx.inputs[2].shape != Dims{s.O}))
    return std::nullopt;
  return std::make_pair(s, Lo);
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

// A convolution's output positions per primitive at most. oneDNN's
// primitive, and the descriptors it weighs while making one, take memory
// that grows with the length: a vocoder's 600,000 samples took gigabytes
// in them alone. Longer outputs are made window by window (each reading
// its input span, the padding where the span passes an end), so every
// window but the last runs one cached primitive.
constexpr int64_t kWindow = 8192;

// A non-transposed convolution's output [O, Lo] (row stride Lo), by
// windows of at most kWindow positions.
Status run_conv_in_windows(KernelContext& ctx, const ConvShape& s, int64_t Lo, const float* x, const float* w,
                           const float* bias, float* out, const char* op) {
  if (s.transposed || Lo <= kWindow) return run_conv(ctx, s, Lo, x, w, bias, out, op);
  const int64_t span = s.dilation * (s.K - 1) + 1;
  thread_local std::vector<float> window;
  for (int64_t q0 = 0; q0 < Lo; q0 += kWindow) {
    const int64_t N = std::min(kWindow, Lo - q0);
    // Input columns [a, b] feed outputs [q0, q0 + N); the part inside x.
    const int64_t a = q0 * s.stride - s.pad_l, b = (q0 + N - 1) * s.stride - s.pad_l + span - 1;
    const int64_t begin = std::max<int64_t>(a, 0), end = std::min(b, s.L - 1);
    window.resize(size_t(s.O * N));
    if (end < begin) {  // all padding: the bias (through the folded activation)
      for (int64_t o = 0; o < s.O; ++o) {
        float v = bias ? bias[o] : 0.0f;
        if (s.leaky && v < 0) v *= s.slope;
        std::fill_n(window.data() + o * N, N, v);
      }
    } else {
      ConvShape p = s;
      p.L = end - begin + 1, p.pad_l = begin - a, p.pad_r = b - end;
      ARCH_TRY_STATUS(run_conv(ctx, p, N, x + begin, w, bias, window.data(), op));
    }
    for (int64_t o = 0; o < s.O; ++o) std::copy_n(window.data() + o * N, N, out + o * Lo + q0);
  }
  return {};
}

// conv_transpose1d with a stride, as `stride` convolutions, one per output
// phase: the positions t with (t + padding) % stride = r read only the taps
// j = r, r + stride, ..., so out[t = q stride + r - padding] is a plain
// convolution over x with those taps reversed, at q. oneDNN's direct
// convolution runs these near the GEMM rate; its own deconvolution of
// HiFi-GAN's stride-8 upsamplers is gemm-based and a third of that.
Status run_by_phases(KernelContext& ctx, const ConvShape& s, int64_t Lo) {
  const int64_t S = s.stride, K = s.K, C = s.C, O = s.O, L = s.L, P = s.pad_l;
  const float* x = ctx.inputs[0].f32();
  const float* w = ctx.inputs[1].f32();
  const float* bias = s.bias ? ctx.inputs[2].f32() : nullptr;
  float* out = ctx.outputs[0].f32();
  thread_local std::vector<float> taps, phase;
  for (int64_t r = 0; r < S; ++r) {
    const int64_t q_lo = floor_div(P - r + S - 1, S), q_hi = floor_div(P + Lo - 1 - r, S);
    if (q_hi < q_lo) continue;                             // no output position in this phase
    const int64_t N = q_hi - q_lo + 1, M = r < K ? (K - r + S - 1) / S : 0;
    // Input columns [a, b] feed it; the part inside x, zeros around.
    const int64_t a = q_lo - (M - 1), b = q_hi, begin = std::max<int64_t>(a, 0), end = std::min(b, L - 1);
    phase.resize(size_t(O * N));
    if (M == 0 || end < begin) {                           // no tap reaches: the bias alone
      for (int64_t o = 0; o < O; ++o) std::fill_n(phase.data() + o * N, N, bias ? bias[o] : 0.0f);
    } else {
      taps.resize(size_t(O * C * M));                      // [O, C, M]: w[c, o, r + (M-1-k) S]
      for (int64_t o = 0; o < O; ++o)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t k = 0; k < M; ++k) taps[size_t((o * C + c) * M + k)] = w[(c * O + o) * K + r + (M - 1 - k) * S];
      ConvShape p = s;
      p.transposed = false, p.stride = 1, p.dilation = 1, p.K = M, p.L = end - begin + 1, p.row = L;
      p.pad_l = begin - a, p.pad_r = b - end;
      ARCH_TRY_STATUS(run_conv_in_windows(ctx, p, N, x + begin, taps.data(), bias, phase.data(), "conv_transpose1d"));
    }
    for (int64_t o = 0; o < O; ++o) {                      // into place: t = q S + r - P
      float* row = out + o * Lo + q_lo * S + r - P;
      const float* y = phase.data() + o * N;
      for (int64_t n = 0; n < N; ++n) row[n * S] = y[n];
    }
  }
  return {};
}

Status conv_cpu(KernelContext& ctx, const Kernel& reference, bool transposed) {
  auto call = shape_of_call(ctx, transposed);
  if (!call) return reference(ctx);
  const auto& [s, Lo] = *call;
  if (transposed && s.stride > 1 && s.dilation == 1 && s.groups == 1 && !s.leaky) return run_by_phases(ctx, s, Lo);
  return run_conv_in_windows(ctx, s, Lo, ctx.inputs[0].f32(), ctx.inputs[1].f32(), s.bias ? ctx.inputs[2].f32() : nullptr,
                             ctx.outputs[0].f32(), transposed ? "conv_transpose1d" : "conv1d");
}

}  // namespace

void register_cpu_conv1d(OpTable& t) {
  for (const bool transposed : {false, true}) {
    const char* op = transposed ? "conv_transpose1d" : "conv1d";
    const Kernel* ref = t.kernel(op, "reference");
    if (!ref) throw std::logic_error(std::string("cpu kernels: no reference kernel for ") + op);
    t.add_kernel(
        op, "cpu", [reference = *ref, transposed](KernelContext& ctx) { return conv_cpu(ctx, reference, transposed); },
        nullptr, nullptr, /*fills=*/true);
  }
}

}  // namespace arch

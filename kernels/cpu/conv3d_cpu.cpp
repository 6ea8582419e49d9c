// The cpu backend's conv3d, in the layout every op keeps ([C, T, H, W]
// between ops): a 1x1x1 stride-1 convolution is one product,
// out [O, T H W] = w [O, C] @ x [C, T H W], then the bias; any other is
// oneDNN's direct convolution, the video reordered into its blocked
// channels and back each call (a pass over memory each way, against kT kH
// kW passes of arithmetic). Unfolding each output frame's rows (im2col, as
// conv2d does) and one product per frame was 1.44x slower on Wan's VAE
// decode (9 frames of 128x128: 18.4 s against 12.7 s on the Xeon, 2
// threads): its rows are 27 copies of the input. F32 only; the rest goes
// to the reference, which also words every error.
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <dnnl.hpp>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/onednn_scratchpad.h"
#include "kernels/reference/conv3d.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// oneDNN's direct convolution on one video (batch 1): its chosen layouts
// (blocked channels), the input, weight and output reordered to and from
// them each call. Primitives kept by shape.
struct Direct {
  dnnl::primitive prim;
  dnnl::memory::desc src_plain, wei_plain, dst_plain, bias, src, wei, dst, scratch;
};
using DirectKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                             int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int>;
struct DirectCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex lock;
  std::map<DirectKey, Direct> cache;
};

Status conv3d_direct(KernelContext& ctx, const Conv3dAttrs& c, const Dims& xs, const Dims& ws, const Dims& os, const float* x,
                     const float* w, const float* bias, float* out) {
  static DirectCache dc;
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  const DirectKey key{xs[0], xs[1], xs[2], xs[3], ws[0], ws[2], ws[3], ws[4], c.stride[0], c.stride[1], c.stride[2],
                      c.pad[0], c.pad[1], c.pad[2], c.pad[3], c.pad[4], c.pad[5], bias != nullptr, omp_get_max_threads()};
  try {
    std::lock_guard<std::mutex> guard(dc.lock);
    auto it = dc.cache.find(key);
    if (it == dc.cache.end()) {
      if (dc.cache.size() >= 64) dc.cache.clear();
      Direct d;
      const dnnl::memory::dims src{1, xs[0], xs[1], xs[2], xs[3]}, wei{ws[0], ws[1], ws[2], ws[3], ws[4]},
          dst{1, os[0], os[1], os[2], os[3]};
      d.src_plain = dnnl::memory::desc(src, dt::f32, tag::ncdhw);
      d.wei_plain = dnnl::memory::desc(wei, dt::f32, tag::oidhw);
      d.dst_plain = dnnl::memory::desc(dst, dt::f32, tag::ncdhw);
      d.bias = dnnl::memory::desc({ws[0]}, dt::f32, tag::a);
      const dnnl::memory::desc no_bias;
      dnnl::convolution_forward::primitive_desc pd(
          dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          dnnl::memory::desc(src, dt::f32, tag::any), dnnl::memory::desc(wei, dt::f32, tag::any),
                                          bias ? d.bias : no_bias, dnnl::memory::desc(dst, dt::f32, tag::any),
                                          {c.stride[0], c.stride[1], c.stride[2]}, {0, 0, 0}, {c.pad[0], c.pad[2], c.pad[4]},
                                          {c.pad[1], c.pad[3], c.pad[5]}),
          user_scratchpad(), dc.engine);
      d.src = pd.src_desc(), d.wei = pd.weights_desc(), d.dst = pd.dst_desc(), d.scratch = pd.scratchpad_desc();
      d.prim = dnnl::convolution_forward(pd);
      it = dc.cache.emplace(key, std::move(d)).first;
    }
    Direct& d = it->second;
    const dnnl::engine& e = dc.engine;
    dnnl::stream stream(e);
    thread_local dnnl::memory src_buf, wei_buf, dst_buf;
    dnnl::memory src = in_layout(d.src_plain, d.src, x, src_buf, e, stream);
    dnnl::memory wei = in_layout(d.wei_plain, d.wei, w, wei_buf, e, stream);
    dnnl::memory out_plain(d.dst_plain, e, out);
    dnnl::memory dst = d.dst == d.dst_plain ? out_plain : scratch_memory(dst_buf, d.dst, e);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
    args.emplace(DNNL_ARG_SCRATCHPAD, scratchpad(d.scratch, e));
    if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(d.bias, e, const_cast<float*>(bias)));
    d.prim.execute(stream, args);
    if (!(d.dst == d.dst_plain)) dnnl::reorder(dst, out_plain).execute(stream, dst, out_plain);
    stream.wait();
  } catch (const dnnl::error& err) {
    return kernel_error(ctx, "conv3d", std::string("oneDNN: ") + err.what());
  }
  return {};
}

Status conv3d_cpu(KernelContext& ctx, const Kernel& reference) {
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1) return reference(ctx);
  const Tensor& X = ctx.inputs[0];
  const Tensor& Wt = ctx.inputs[1];
  const bool has_bias = ctx.inputs.size() > 2 && ctx.inputs[2].data;
  if (!X.data || !Wt.data || X.dtype != DType::F32 || Wt.dtype != DType::F32 || (has_bias && ctx.inputs[2].dtype != DType::F32))
    return reference(ctx);
  auto c = conv3d_attrs(ctx.attrs);
  if (!c.ok()) return reference(ctx);
  auto dims = conv3d_dims(X.shape, Wt.shape, has_bias ? &ctx.inputs[2].shape : nullptr, *c);
  Tensor& out = ctx.outputs[0];
  if (!dims.ok() || out.dtype != DType::F32 || out.shape != *dims) return reference(ctx);
  const int64_t C = X.dim(0), O = Wt.dim(0), N = X.numel() / std::max<int64_t>(C, 1);
  const bool pointwise = Wt.dim(2) == 1 && Wt.dim(3) == 1 && Wt.dim(4) == 1 && std::all_of(c->stride, c->stride + 3, [](int64_t s) { return s == 1; }) &&
                         std::all_of(c->pad, c->pad + 6, [](int64_t p) { return p == 0; });
  if (!pointwise) {
    if (out.numel() == 0) return {};  // too few frames: none out
    return conv3d_direct(ctx, *c, X.shape, Wt.shape, *dims, X.f32(), Wt.f32(), has_bias ? ctx.inputs[2].f32() : nullptr,
                         out.f32());
  }
  // out [O, N] = w [O, C] @ x [C, N], then the bias.
  if (N > 0) ARCH_TRY_STATUS(matmul_strided_f32(O, C, N, Wt.f32(), C, X.f32(), N, false, out.f32(), N, 1.0f, ctx.where));
  if (has_bias) {
    const float* b = ctx.inputs[2].f32();
    float* o = out.f32();
#pragma omp parallel for schedule(static)
    for (int64_t oc = 0; oc < O; ++oc)
      for (int64_t k = 0; k < N; ++k) o[oc * N + k] += b[oc];
  }
  return {};
}

}  // namespace

void register_cpu_conv3d(OpTable& t) {
  const Kernel* ref = t.kernel("conv3d", "reference");
  if (!ref) throw std::logic_error("cpu kernels: no reference kernel for conv3d");
  t.add_kernel(
      "conv3d", "cpu", [reference = *ref](KernelContext& ctx) { return conv3d_cpu(ctx, reference); }, nullptr, nullptr,
      /*fills=*/true);
}

}  // namespace arch

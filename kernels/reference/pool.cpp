// max_pool2d(x [C, H, W]), avg_pool2d(x [C, H, W]) attrs kernel, stride,
// padding, ceil_mode (avg: count_include_pad) -> [C, H', W']: torch's
// max_pool2d / avg_pool2d on one image (no batch dim), a square window, the
// same stride and padding on both axes (stride 0: = kernel, torch's default).
//   H' = floor_or_ceil((H + 2 padding - kernel) / stride) + 1, less one when
//   ceil_mode makes the last window start past H + padding (torch's rule).
// Max: padded cells count as -inf (a NaN in a window wins, as in torch). Avg:
// the window sum over real cells divided by the window's size clipped to the
// padded input (count_include_pad) or by the real cells it covers (torch's
// avg_pool2d, divisor_override unset). padding <= kernel / 2, as torch asks.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

struct PoolAttrs {
  int64_t kernel, stride, padding;
  bool ceil_mode, count_include_pad;
};

PoolAttrs pool_attrs(const Attrs& a) {
  PoolAttrs p{attr_int(a, "kernel", 0), attr_int(a, "stride", 0), attr_int(a, "padding", 0),
              attr_bool(a, "ceil_mode", false), attr_bool(a, "count_include_pad", true)};
  if (p.stride == 0) p.stride = p.kernel;
  return p;
}

// torch's pooling_output_shape (dilation 1): n + 2p - k over the stride,
// rounded down (or up with ceil_mode, unless that window would start in the
// right padding), plus one. Floor division of a possibly negative numerator.
int64_t pool_out(int64_t n, const PoolAttrs& p) {
  int64_t num = n + 2 * p.padding - p.kernel + (p.ceil_mode ? p.stride - 1 : 0);
  int64_t q = num >= 0 ? num / p.stride : -((-num + p.stride - 1) / p.stride);
  int64_t out = q + 1;
  if (p.ceil_mode && (out - 1) * p.stride >= n + p.padding) --out;
  return out;
}

// Checks on the attributes and x's concrete dims; the output dims or a message.
Result<Dims> pool_dims(const Dims& x, const PoolAttrs& p) {
  if (x.size() != 3) return error("x must be [C, H, W], got " + dims_str(x));
  if (p.kernel < 1) return error("kernel must be >= 1, got " + std::to_string(p.kernel));
  if (p.stride < 1) return error("stride must be >= 0 (0: the kernel), got " + std::to_string(p.stride));
  if (p.padding < 0 || p.padding > p.kernel / 2)
    return error("padding must be between 0 and kernel / 2 = " + std::to_string(p.kernel / 2) + ", got " +
                 std::to_string(p.padding));
  const int64_t H = pool_out(x[1], p), W = pool_out(x[2], p);
  if (H < 1 || W < 1)
    return error("the window " + std::to_string(p.kernel) + "x" + std::to_string(p.kernel) +
                 " is larger than x " + dims_str(x) + " padded by " + std::to_string(p.padding));
  return Dims{x[0], H, W};
}

Result<std::vector<TypedShape>> pool_shape(const std::string& op, std::span<const TypedShape> in,
                                           const Attrs& attrs) {
  const Shape& x = in[0].shape;
  if (x.size() != 3) return error(op + ": x must be [C, H, W], got " + shape_str(x));
  bool dyn_h = x[1].sym == kDynSym || x[1].is_named(), dyn_w = x[2].sym == kDynSym || x[2].is_named();  // per call
  if ((!x[1].concrete() && !dyn_h) || (!x[2].concrete() && !dyn_w))
    return error(op + ": x " + shape_str(x) + " must have concrete (or `_`) H and W");
  // C passes through as it is (it may be symbolic); H and W are computed.
  const int64_t big = int64_t(1) << 20;
  auto out = pool_dims(Dims{x[0].concrete() ? x[0].n : 1, dyn_h ? big : x[1].n, dyn_w ? big : x[2].n},
                       pool_attrs(attrs));
  if (!out.ok()) return error(op + ": " + out.error().message);
  return one_output(Shape{x[0], dyn_h ? Dim::dyn() : Dim::of((*out)[1]), dyn_w ? Dim::dyn() : Dim::of((*out)[2])});
}

Status pool_kernel(KernelContext& ctx, const char* op, bool max) {
  ARCH_TRY_STATUS(expect_f32(ctx, op, 0));
  const Tensor& X = ctx.inputs[0];
  const PoolAttrs p = pool_attrs(ctx.attrs);
  auto dims = pool_dims(X.shape, p);
  if (!dims.ok()) return kernel_error(ctx, op, dims.error().message);
  ARCH_TRY_STATUS(expect_output(ctx, op, 0, *dims));
  const int64_t C = X.shape[0], H = X.shape[1], W = X.shape[2];
  const int64_t Ho = (*dims)[1], Wo = (*dims)[2];
  float* out = ctx.outputs[0].f32();
  for (int64_t c = 0; c < C; ++c) {
    const float* x = X.f32() + c * H * W;
    for (int64_t oh = 0; oh < Ho; ++oh)
      for (int64_t ow = 0; ow < Wo; ++ow) {
        // The window in padded coordinates, then clipped to the real cells.
        const int64_t h0 = oh * p.stride - p.padding, w0 = ow * p.stride - p.padding;
        const int64_t h1 = std::min(h0 + p.kernel, H + p.padding), w1 = std::min(w0 + p.kernel, W + p.padding);
        const int64_t window = (h1 - h0) * (w1 - w0);  // avg's count_include_pad divisor
        const int64_t hs = std::max<int64_t>(h0, 0), ws = std::max<int64_t>(w0, 0);
        const int64_t he = std::min(h1, H), we = std::min(w1, W);
        float v;
        if (max) {
          // out = max over the window's real cells (padding is -inf); NaN wins
          v = -std::numeric_limits<float>::infinity();
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w) {
              const float e = x[h * W + w];
              if (e > v || std::isnan(e)) v = e;
            }
        } else {
          // out = sum over real cells / (window clipped to the padding, or real cells only)
          const int64_t cells = (he - hs) * (we - ws);
          float sum = 0.0f;
          for (int64_t h = hs; h < he; ++h)
            for (int64_t w = ws; w < we; ++w) sum += x[h * W + w];
          const int64_t divisor = p.count_include_pad ? window : cells;
          v = cells > 0 && divisor > 0 ? sum / float(divisor) : 0.0f;
        }
        out[(c * Ho + oh) * Wo + ow] = v;
      }
  }
  return {};
}

void define_one(OpTable& t, const std::string& name, bool max, std::string doc) {
  std::vector<AttrSpec> attrs = {{"kernel", AttrSpec::Int, nullptr},
                                 {"stride", AttrSpec::Int, 0},
                                 {"padding", AttrSpec::Int, 0},
                                 {"ceil_mode", AttrSpec::Bool, false}};
  if (!max) attrs.push_back({"count_include_pad", AttrSpec::Bool, true});
  t.define(checked(OpDef{
               .name = name,
               .inputs = {"x"},
               .attrs = attrs,
               .shape = [name](std::span<const TypedShape> in, std::span<const bool>,
                               const Attrs& a) { return pool_shape(name, in, a); },
               .tolerance = {1e-5, 1e-6},
               .doc = std::move(doc),
           }),
           [name, max](KernelContext& ctx) { return pool_kernel(ctx, name.c_str(), max); });
}

}  // namespace

void define_pool(OpTable& t) {
  define_one(t, "max_pool2d", true,
             "max_pool2d(x [C, H, W]) -> [C, H', W']: the max over each kernel x kernel window (padding is -inf; stride 0: = kernel)");
  define_one(t, "avg_pool2d", false,
             "avg_pool2d(x [C, H, W]) -> [C, H', W']: the mean over each kernel x kernel window (stride 0: = kernel; torch's count_include_pad)");
}

}  // namespace arch

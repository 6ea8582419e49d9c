// Swin's windows over a feature map of H x W tokens (rows of x, row-major;
// `like` [_, H, W] gives H and W), window w, shift s (a cyclic roll of
// -s on both axes first, as torch.roll):
//   window_partition(x [H·W, C], like) -> [w², (H/w)(W/w), C]: each window's
//     tokens, row-major inside it, windows row-major; tokens first, so the
//     windows sit where attention's heads do.
//   window_reverse(x [w², nW, C], like) -> [H·W, C]: partition's inverse
//     (the roll undone).
//   shifted_window_mask(like) -> [nW, w², w²]: `value` between tokens of
//     one window that came from different regions of the rolled map (the
//     three bands 0..H-w, H-w..H-s, H-s..H on each axis), else 0.
//   window_coords() -> [(2w-1)², 2]: Swin V2's relative offsets (dh, dw),
//     each / (pretrained or w - 1) * 8, as sign · log2(1 + |x|) / 3.
//   window_relative_index() -> i32 [w², w²]: the row of that table each
//     pair of a window's tokens reads.
#include <cmath>
#include <vector>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

int64_t window_attr(const Attrs& a) { return attr_int(a, "window", 8); }
int64_t shift_attr(const Attrs& a) { return attr_int(a, "shift", 0); }

Status check_window(const char* op, int64_t w, int64_t s) {
  if (w < 1 || s < 0 || s >= w)
    return error(std::string(op) + ": window " + std::to_string(w) + " and shift " + std::to_string(s) +
                 " must have 1 <= window and 0 <= shift < window");
  return {};
}

// H, W of like [..., H, W], each a multiple of the window (errors for kernel_error to prefix).
Result<std::pair<int64_t, int64_t>> grid(const Tensor& like, int64_t w) {
  if (like.shape.size() < 2) return error("like must be [..., H, W], got " + dims_str(like.shape));
  const int64_t H = like.dim(-2), W = like.dim(-1);
  if (H % w || W % w || H == 0 || W == 0)
    return error("the map " + std::to_string(H) + " x " + std::to_string(W) +
                 " is not a whole number of " + std::to_string(w) + " x " + std::to_string(w) + " windows (pad it first)");
  return std::pair<int64_t, int64_t>{H, W};
}

Dim windows_of(const Shape& like, int64_t w) {
  const Dim &H = like[like.size() - 2], &W = like[like.size() - 1];
  return H.concrete() && W.concrete() ? Dim::of((H.n / w) * (W.n / w)) : Dim::dyn();
}

// For token t (0..w²-1) of window n: its row in the un-rolled H x W map.
int64_t source_row(int64_t n, int64_t t, int64_t w, int64_t s, int64_t H, int64_t W) {
  const int64_t per_row = W / w;
  const int64_t i = (n / per_row) * w + t / w, j = (n % per_row) * w + t % w;  // in the rolled map
  return ((i + s) % H) * W + (j + s) % W;                                       // rolled by -s: from +s
}

Result<std::vector<TypedShape>> partition_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  const Shape &x = in[0].shape, &like = in[1].shape;
  ARCH_TRY_STATUS(check_window("window_partition", window_attr(a), shift_attr(a)));
  if (x.size() != 2 || like.size() < 2)
    return error("window_partition: x must be [H·W, C] and like [..., H, W], got " + shape_str(x) + " and " + shape_str(like));
  const int64_t w = window_attr(a);
  return one_output(Shape{Dim::of(w * w), windows_of(like, w), x[1]}, in[0].dtype);
}

Status partition_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "window_partition", 0));
  if (ctx.inputs.size() < 2) return kernel_error(ctx, "window_partition", "takes x and like");
  const int64_t w = window_attr(ctx.attrs), s = shift_attr(ctx.attrs);
  auto g = grid(ctx.inputs[1], w);
  if (!g.ok()) return kernel_error(ctx, "window_partition", g.error().message);
  const auto [H, W] = *g;
  const Tensor& X = ctx.inputs[0];
  if (X.shape.size() != 2 || X.dim(0) != H * W)
    return kernel_error(ctx, "window_partition", "x " + dims_str(X.shape) + " is not [" + std::to_string(H * W) + ", C]");
  const int64_t C = X.dim(1), nW = (H / w) * (W / w);
  ARCH_TRY_STATUS(expect_output(ctx, "window_partition", 0, Dims{w * w, nW, C}));
  for (int64_t t = 0; t < w * w; ++t)
    for (int64_t n = 0; n < nW; ++n) {
      const float* from = X.f32() + source_row(n, t, w, s, H, W) * C;
      std::copy(from, from + C, ctx.outputs[0].f32() + (t * nW + n) * C);
    }
  return {};
}

Result<std::vector<TypedShape>> reverse_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  const Shape &x = in[0].shape, &like = in[1].shape;
  ARCH_TRY_STATUS(check_window("window_reverse", window_attr(a), shift_attr(a)));
  if (x.size() != 3 || like.size() < 2)
    return error("window_reverse: x must be [w², windows, C] and like [..., H, W], got " + shape_str(x) + " and " + shape_str(like));
  const Dim &H = like[like.size() - 2], &W = like[like.size() - 1];
  return one_output(Shape{H.concrete() && W.concrete() ? Dim::of(H.n * W.n) : Dim::dyn(), x[2]}, in[0].dtype);
}

Status reverse_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "window_reverse", 0));
  if (ctx.inputs.size() < 2) return kernel_error(ctx, "window_reverse", "takes x and like");
  const int64_t w = window_attr(ctx.attrs), s = shift_attr(ctx.attrs);
  auto g = grid(ctx.inputs[1], w);
  if (!g.ok()) return kernel_error(ctx, "window_reverse", g.error().message);
  const auto [H, W] = *g;
  const Tensor& X = ctx.inputs[0];
  const int64_t nW = (H / w) * (W / w);
  if (X.shape.size() != 3 || X.dim(0) != w * w || X.dim(1) != nW)
    return kernel_error(ctx, "window_reverse", "x " + dims_str(X.shape) + " is not [" + std::to_string(w * w) + ", " +
                                                   std::to_string(nW) + ", C]");
  const int64_t C = X.dim(2);
  ARCH_TRY_STATUS(expect_output(ctx, "window_reverse", 0, Dims{H * W, C}));
  for (int64_t t = 0; t < w * w; ++t)
    for (int64_t n = 0; n < nW; ++n) {
      const float* from = X.f32() + (t * nW + n) * C;
      std::copy(from, from + C, ctx.outputs[0].f32() + source_row(n, t, w, s, H, W) * C);
    }
  return {};
}

Result<std::vector<TypedShape>> mask_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& a) {
  ARCH_TRY_STATUS(check_window("shifted_window_mask", window_attr(a), shift_attr(a)));
  if (in[0].shape.size() < 2) return error("shifted_window_mask: like must be [..., H, W], got " + shape_str(in[0].shape));
  const int64_t w = window_attr(a);
  return one_output(Shape{windows_of(in[0].shape, w), Dim::of(w * w), Dim::of(w * w)});
}

Status mask_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "shifted_window_mask", "takes like");
  const int64_t w = window_attr(ctx.attrs), s = shift_attr(ctx.attrs);
  auto g = grid(ctx.inputs[0], w);
  if (!g.ok()) return kernel_error(ctx, "shifted_window_mask", g.error().message);
  const auto [H, W] = *g;
  const int64_t nW = (H / w) * (W / w), per_row = W / w;
  ARCH_TRY_STATUS(expect_output(ctx, "shifted_window_mask", 0, Dims{nW, w * w, w * w}));
  const float value = float(attr_float(ctx.attrs, "value", -100.0));
  // The band of a coordinate of the rolled map: 0 before n - w, 1 before n - s, else 2.
  auto band = [w, s](int64_t x, int64_t n) -> int64_t { return x < n - w ? 0 : x < n - s ? 1 : 2; };
  std::vector<int64_t> region(size_t(w * w));
  float* out = ctx.outputs[0].f32();
  for (int64_t n = 0; n < nW; ++n) {
    for (int64_t t = 0; t < w * w; ++t) {
      const int64_t i = (n / per_row) * w + t / w, j = (n % per_row) * w + t % w;
      region[size_t(t)] = s > 0 ? band(i, H) * 3 + band(j, W) : 0;
    }
    for (int64_t a = 0; a < w * w; ++a)
      for (int64_t b = 0; b < w * w; ++b) out[(n * w * w + a) * w * w + b] = region[size_t(a)] == region[size_t(b)] ? 0.0f : value;
  }
  return {};
}

Result<std::vector<TypedShape>> coords_shape(std::span<const TypedShape>, std::span<const bool>, const Attrs& a) {
  const int64_t w = window_attr(a);
  if (w < 2) return error("window_coords: window must be at least 2, got " + std::to_string(w));
  return one_output(Shape{Dim::of((2 * w - 1) * (2 * w - 1)), Dim::of(2)});
}

Status coords_kernel(KernelContext& ctx) {
  const int64_t w = window_attr(ctx.attrs), pretrained = attr_int(ctx.attrs, "pretrained_window", 0);
  const int64_t n = 2 * w - 1;
  ARCH_TRY_STATUS(expect_output(ctx, "window_coords", 0, Dims{n * n, 2}));
  const float span = float(pretrained > 0 ? pretrained - 1 : w - 1);
  // As transformers computes it in float32: / span, * 8, sign * log2(|x| + 1) / log2(8).
  auto log_spaced = [span](int64_t d) {
    const float x = float(d) / span * 8.0f;
    const float m = std::log2(std::fabs(x) + 1.0f) / 3.0f;
    return x > 0 ? m : x < 0 ? -m : 0.0f;
  };
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      ctx.outputs[0].f32()[(i * n + j) * 2] = log_spaced(i - (w - 1));
      ctx.outputs[0].f32()[(i * n + j) * 2 + 1] = log_spaced(j - (w - 1));
    }
  return {};
}

Result<std::vector<TypedShape>> index_shape(std::span<const TypedShape>, std::span<const bool>, const Attrs& a) {
  const int64_t w = window_attr(a);
  if (w < 1) return error("window_relative_index: window must be at least 1, got " + std::to_string(w));
  return one_output(Shape{Dim::of(w * w), Dim::of(w * w)}, DType::I32);
}

Status index_kernel(KernelContext& ctx) {
  const int64_t w = window_attr(ctx.attrs);
  ARCH_TRY_STATUS(expect_output(ctx, "window_relative_index", 0, Dims{w * w, w * w}, DType::I32));
  for (int64_t a = 0; a < w * w; ++a)
    for (int64_t b = 0; b < w * w; ++b) {
      const int64_t dh = a / w - b / w + w - 1, dw = a % w - b % w + w - 1;
      ctx.outputs[0].i32()[a * w * w + b] = int32_t(dh * (2 * w - 1) + dw);
    }
  return {};
}

}  // namespace

void define_windows(OpTable& t) {
  const AttrSpec window{"window", AttrSpec::Int, 8}, shift{"shift", AttrSpec::Int, 0};
  t.define(checked(OpDef{
               .name = "window_partition",
               .inputs = {"x", "like"},
               .attrs = {window, shift},
               .shape = partition_shape,
               .tolerance = {0, 0},
               .doc = "window_partition(x [H·W, C], like [..., H, W]) -> [w², windows, C]: Swin's windows of the map rolled by -shift",
           }),
           partition_kernel);
  t.define(checked(OpDef{
               .name = "window_reverse",
               .inputs = {"x", "like"},
               .attrs = {window, shift},
               .shape = reverse_shape,
               .tolerance = {0, 0},
               .doc = "window_reverse(x [w², windows, C], like [..., H, W]) -> [H·W, C]: window_partition's inverse",
           }),
           reverse_kernel);
  t.define(checked(OpDef{
               .name = "shifted_window_mask",
               .inputs = {"like"},
               .attrs = {window, shift, {"value", AttrSpec::Float, -100.0}},
               .shape = mask_shape,
               .tolerance = {0, 0},
               .doc = "shifted_window_mask(like [..., H, W]) -> [windows, w², w²]: value between a rolled window's tokens from different regions, else 0",
           }),
           mask_kernel);
  t.define(checked(OpDef{
               .name = "window_coords",
               .inputs = {},
               .attrs = {window, {"pretrained_window", AttrSpec::Int, 0}},
               .shape = coords_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "window_coords() -> [(2w-1)², 2]: Swin V2's log-spaced relative offsets (dh, dw) of a window",
           }),
           coords_kernel);
  t.define(checked(OpDef{
               .name = "window_relative_index",
               .inputs = {},
               .attrs = {window},
               .shape = index_shape,
               .tolerance = {0, 0},
               .doc = "window_relative_index() -> i32 [w², w²]: the row of window_coords each pair of a window's tokens reads",
           }),
           index_kernel);
}

}  // namespace arch

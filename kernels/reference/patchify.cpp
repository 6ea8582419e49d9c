// Latents as patch tokens and back, as a sampling loop over a packed
// transformer needs them (Flux's 2x2 packing; a video's [C, F, H, W]
// latents frame by frame, patches one frame deep: Wan's (1, 2, 2) patch
// embedding, tokens frame-major):
//   patchify(x [C, H, W]) attr patch p -> [(H/p)(W/p), C p p]: token
//     (i, j) row-major; its features channel-major, then the patch's row
//     and column (x[c, i p + a, j p + b] at feature (c p + a) p + b).
//   unpatchify(tokens, like [C, H, W]) attr patch -> [C, H, W]: the
//     inverse; `like` gives only the size.
//   patch_ids(x [C, H, W]) attr patch -> f32 [(H/p)(W/p), 3]: (0, i, j)
//     of each token, the position ids a multi-axis RoPE reads; of a video
//     [C, F, H, W], (f, i, j).
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// An image [C, H, W] or a video [C, F, H, W]: its patch tokens' count.
Dim tokens_of(const Shape& x, int64_t p) {
  const size_t r = x.size();
  if (r == 4 && !x[1].concrete()) return Dim::dyn();
  if (x[r - 2].concrete() && x[r - 1].concrete()) return Dim::of((r == 4 ? x[1].n : 1) * (x[r - 2].n / p) * (x[r - 1].n / p));
  return Dim::dyn();
}

Result<int64_t> patch_of(const char* op, const Shape& x, const Attrs& attrs) {
  const int64_t p = attr_int(attrs, "patch", 2);
  if (x.size() != 3 && x.size() != 4) return error(std::string(op) + ": x must be [C, H, W] or [C, F, H, W], got " + shape_str(x));
  if (p < 1) return error(std::string(op) + ": patch must be >= 1, got " + std::to_string(p));
  for (size_t d = x.size() - 2; d < x.size(); ++d)
    if (x[d].concrete() && x[d].n % p != 0)
      return error(std::string(op) + ": H and W must be multiples of the patch (" + std::to_string(p) + "), got " +
                   shape_str(x));
  return p;
}

// patchify's and patch_ids' output: a row per patch token, `features` wide
// (0: the patch's C p p values).
Result<std::vector<TypedShape>> tokens_shape(const char* op, std::span<const TypedShape> in, const Attrs& attrs,
                                             int64_t features) {
  if (in.size() != 1) return error(std::string(op) + ": takes x");
  const Shape& x = in[0].shape;
  ARCH_TRY(int64_t p, patch_of(op, x, attrs));
  const Dim width = features ? Dim::of(features) : x[0].concrete() ? Dim::of(x[0].n * p * p) : Dim::dyn();
  return one_output({tokens_of(x, p), width});
}

Result<std::vector<TypedShape>> patchify_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  return tokens_shape("patchify", in, attrs, 0);
}

Result<std::vector<TypedShape>> patch_ids_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  return tokens_shape("patch_ids", in, attrs, 3);
}

Result<std::vector<TypedShape>> unpatchify_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  if (in.size() != 2) return error("unpatchify: takes tokens and like");
  const Shape& t = in[0].shape;
  const Shape& like = in[1].shape;
  ARCH_TRY(int64_t p, patch_of("unpatchify", like, attrs));
  if (t.size() != 2) return error("unpatchify: tokens must be [n, C*patch*patch], got " + shape_str(t));
  if (t[1].concrete() && like[0].concrete() && t[1].n != like[0].n * p * p)
    return error("unpatchify: tokens " + shape_str(t) + " do not hold " + shape_str(like) + " in " + std::to_string(p) +
                 "x" + std::to_string(p) + " patches");
  return one_output(like);
}

// An image's or a video's C, F (1 for an image), H and W.
struct Grid {
  int64_t C, F, H, W;
};
Grid grid_of(const Tensor& x) {
  return x.shape.size() == 4 ? Grid{x.dim(0), x.dim(1), x.dim(2), x.dim(3)} : Grid{x.dim(0), 1, x.dim(1), x.dim(2)};
}

// x[c, f, i p + a, j p + b] <-> tokens[(f (H/p) + i) (W/p) + j, (c p + a) p + b]
template <class Fn>
void for_each_patch_element(const Grid& g, int64_t p, Fn&& fn) {
  const int64_t gh = g.H / p, gw = g.W / p, features = g.C * p * p;
  for (int64_t f = 0; f < g.F; ++f)
    for (int64_t i = 0; i < gh; ++i)
      for (int64_t j = 0; j < gw; ++j)
        for (int64_t c = 0; c < g.C; ++c)
          for (int64_t a = 0; a < p; ++a)
            for (int64_t b = 0; b < p; ++b)
              fn(((c * g.F + f) * g.H + i * p + a) * g.W + j * p + b, ((f * gh + i) * gw + j) * features + (c * p + a) * p + b);
}

Status check_image(const KernelContext& ctx, const char* op, const Tensor& x, int64_t p) {
  if (!x.data || (x.shape.size() != 3 && x.shape.size() != 4)) return kernel_error(ctx, op, "x must be [C, H, W] or [C, F, H, W]");
  if (p < 1 || x.dim(-2) % p != 0 || x.dim(-1) % p != 0)
    return kernel_error(ctx, op, "H and W must be multiples of the patch " + std::to_string(p) + ", got " + dims_str(x.shape));
  return {};
}

Status patchify_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "patchify", 0));
  const Tensor& X = ctx.inputs[0];
  const int64_t p = attr_int(ctx.attrs, "patch", 2);
  ARCH_TRY_STATUS(check_image(ctx, "patchify", X, p));
  const Grid g = grid_of(X);
  ARCH_TRY_STATUS(expect_output(ctx, "patchify", 0, Dims{g.F * (g.H / p) * (g.W / p), g.C * p * p}));
  float* y = ctx.outputs[0].f32();
  for_each_patch_element(g, p, [&](int64_t image, int64_t token) { y[token] = X.f32()[image]; });
  return {};
}

Status unpatchify_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "unpatchify", 0));
  if (ctx.inputs.size() != 2) return kernel_error(ctx, "unpatchify", "takes tokens and like");
  const Tensor& T = ctx.inputs[0];
  const Tensor& like = ctx.inputs[1];
  const int64_t p = attr_int(ctx.attrs, "patch", 2);
  ARCH_TRY_STATUS(check_image(ctx, "unpatchify", like, p));
  const Grid g = grid_of(like);
  if (T.shape != Dims{g.F * (g.H / p) * (g.W / p), g.C * p * p})
    return kernel_error(ctx, "unpatchify", "tokens " + dims_str(T.shape) + " do not hold " + dims_str(like.shape));
  ARCH_TRY_STATUS(expect_output(ctx, "unpatchify", 0, like.shape));
  float* y = ctx.outputs[0].f32();
  for_each_patch_element(g, p, [&](int64_t image, int64_t token) { y[image] = T.f32()[token]; });
  return {};
}

Status patch_ids_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() != 1) return kernel_error(ctx, "patch_ids", "takes x");
  const Tensor& X = ctx.inputs[0];
  const int64_t p = attr_int(ctx.attrs, "patch", 2);
  ARCH_TRY_STATUS(check_image(ctx, "patch_ids", X, p));
  const Grid g = grid_of(X);
  const int64_t gh = g.H / p, gw = g.W / p;
  ARCH_TRY_STATUS(expect_output(ctx, "patch_ids", 0, Dims{g.F * gh * gw, 3}));
  float* y = ctx.outputs[0].f32();
  for (int64_t f = 0; f < g.F; ++f)
    for (int64_t i = 0; i < gh; ++i)
      for (int64_t j = 0; j < gw; ++j) {
        float* row = y + ((f * gh + i) * gw + j) * 3;
        row[0] = float(f);  // an image's one frame: 0
        row[1] = float(i);
        row[2] = float(j);
      }
  return {};
}

}  // namespace

void define_patchify(OpTable& t) {
  t.define(checked(OpDef{
               .name = "patchify",
               .inputs = {"x"},
               .attrs = {{"patch", AttrSpec::Int, 2}},
               .shape = patchify_shape,
               .tolerance = {0, 0},
               .doc = "patchify(x [C, (F,) H, W]) -> [(F)(H/patch)(W/patch), C*patch*patch]: patch tokens frame- and row-major, features (c, row, col)",
           }),
           patchify_kernel);
  t.define(checked(OpDef{
               .name = "unpatchify",
               .inputs = {"tokens", "like"},
               .attrs = {{"patch", AttrSpec::Int, 2}},
               .shape = unpatchify_shape,
               .tolerance = {0, 0},
               .doc = "unpatchify(tokens, like [C, (F,) H, W]) -> like's shape: patchify's inverse (like gives the size)",
           }),
           unpatchify_kernel);
  t.define(checked(OpDef{
               .name = "patch_ids",
               .inputs = {"x"},
               .attrs = {{"patch", AttrSpec::Int, 2}},
               .shape = patch_ids_shape,
               .tolerance = {0, 0},
               .doc = "patch_ids(x [C, (F,) H, W]) -> f32 [tokens, 3]: (frame (0 for an image), row, col) of each patch token",
           }),
           patch_ids_kernel);
}

}  // namespace arch

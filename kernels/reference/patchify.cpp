// Latents as patch tokens and back, as a sampling loop over a packed
// transformer needs them (Flux's 2x2 packing):
//   patchify(x [C, H, W]) attr patch p -> [(H/p)(W/p), C p p]: token
//     (i, j) row-major; its features channel-major, then the patch's row
//     and column (x[c, i p + a, j p + b] at feature (c p + a) p + b).
//   unpatchify(tokens, like [C, H, W]) attr patch -> [C, H, W]: the
//     inverse; `like` gives only the size.
//   patch_ids(x [C, H, W]) attr patch -> f32 [(H/p)(W/p), 3]: (0, i, j)
//     of each token, the position ids a multi-axis RoPE reads.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Dim tokens_of(const Shape& x, int64_t p) {
  if (x[1].concrete() && x[2].concrete()) return Dim::of((x[1].n / p) * (x[2].n / p));
  return Dim::dyn();
}

Result<int64_t> patch_of(const char* op, const Shape& x, const Attrs& attrs) {
  const int64_t p = attr_int(attrs, "patch", 2);
  if (x.size() != 3) return error(std::string(op) + ": x must be [C, H, W], got " + shape_str(x));
  if (p < 1) return error(std::string(op) + ": patch must be >= 1, got " + std::to_string(p));
  for (size_t d = 1; d < 3; ++d)
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

// x[c, i p + a, j p + b] <-> tokens[i (W/p) + j, (c p + a) p + b]
template <class F>
void for_each_patch_element(int64_t C, int64_t H, int64_t W, int64_t p, F&& f) {
  const int64_t gw = W / p, features = C * p * p;
  for (int64_t i = 0; i < H / p; ++i)
    for (int64_t j = 0; j < gw; ++j)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t a = 0; a < p; ++a)
          for (int64_t b = 0; b < p; ++b)
            f((c * H + i * p + a) * W + j * p + b, (i * gw + j) * features + (c * p + a) * p + b);
}

Status check_image(const KernelContext& ctx, const char* op, const Tensor& x, int64_t p) {
  if (!x.data || x.shape.size() != 3) return kernel_error(ctx, op, "x must be [C, H, W]");
  if (p < 1 || x.dim(1) % p != 0 || x.dim(2) % p != 0)
    return kernel_error(ctx, op, "H and W must be multiples of the patch " + std::to_string(p) + ", got " + dims_str(x.shape));
  return {};
}

Status patchify_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "patchify", 0));
  const Tensor& X = ctx.inputs[0];
  const int64_t p = attr_int(ctx.attrs, "patch", 2);
  ARCH_TRY_STATUS(check_image(ctx, "patchify", X, p));
  const int64_t C = X.dim(0), H = X.dim(1), W = X.dim(2);
  ARCH_TRY_STATUS(expect_output(ctx, "patchify", 0, Dims{(H / p) * (W / p), C * p * p}));
  float* y = ctx.outputs[0].f32();
  for_each_patch_element(C, H, W, p, [&](int64_t image, int64_t token) { y[token] = X.f32()[image]; });
  return {};
}

Status unpatchify_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "unpatchify", 0));
  if (ctx.inputs.size() != 2) return kernel_error(ctx, "unpatchify", "takes tokens and like");
  const Tensor& T = ctx.inputs[0];
  const Tensor& like = ctx.inputs[1];
  const int64_t p = attr_int(ctx.attrs, "patch", 2);
  ARCH_TRY_STATUS(check_image(ctx, "unpatchify", like, p));
  const int64_t C = like.dim(0), H = like.dim(1), W = like.dim(2);
  if (T.shape != Dims{(H / p) * (W / p), C * p * p})
    return kernel_error(ctx, "unpatchify", "tokens " + dims_str(T.shape) + " do not hold " + dims_str(like.shape));
  ARCH_TRY_STATUS(expect_output(ctx, "unpatchify", 0, Dims{C, H, W}));
  float* y = ctx.outputs[0].f32();
  for_each_patch_element(C, H, W, p, [&](int64_t image, int64_t token) { y[image] = T.f32()[token]; });
  return {};
}

Status patch_ids_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() != 1) return kernel_error(ctx, "patch_ids", "takes x");
  const Tensor& X = ctx.inputs[0];
  const int64_t p = attr_int(ctx.attrs, "patch", 2);
  ARCH_TRY_STATUS(check_image(ctx, "patch_ids", X, p));
  const int64_t gh = X.dim(1) / p, gw = X.dim(2) / p;
  ARCH_TRY_STATUS(expect_output(ctx, "patch_ids", 0, Dims{gh * gw, 3}));
  float* y = ctx.outputs[0].f32();
  for (int64_t i = 0; i < gh; ++i)
    for (int64_t j = 0; j < gw; ++j) {
      float* row = y + (i * gw + j) * 3;
      row[0] = 0.0f;
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
               .doc = "patchify(x [C, H, W]) -> [(H/patch)(W/patch), C*patch*patch]: patch tokens row-major, features (c, row, col)",
           }),
           patchify_kernel);
  t.define(checked(OpDef{
               .name = "unpatchify",
               .inputs = {"tokens", "like"},
               .attrs = {{"patch", AttrSpec::Int, 2}},
               .shape = unpatchify_shape,
               .tolerance = {0, 0},
               .doc = "unpatchify(tokens, like [C, H, W]) -> [C, H, W]: patchify's inverse (like gives the size)",
           }),
           unpatchify_kernel);
  t.define(checked(OpDef{
               .name = "patch_ids",
               .inputs = {"x"},
               .attrs = {{"patch", AttrSpec::Int, 2}},
               .shape = patch_ids_shape,
               .tolerance = {0, 0},
               .doc = "patch_ids(x [C, H, W]) -> f32 [(H/patch)(W/patch), 3]: (0, row, col) of each patch token",
           }),
           patch_ids_kernel);
}

}  // namespace arch

// Multi-axis rotary embeddings, as Flux's FluxPosEmbed and diffusers'
// apply_rotary_emb compute them.
//
// rope_axes_tables(ids [n, A]) attrs axes_dims, theta -> (cos [n, D],
// sin [n, D]), D = the sum of axes_dims: axis a's section of d_a features
// rotates by the position ids[:, a], at frequencies
// theta^(-2k / d_a) for k < d_a / 2, each repeated for its pair of features
// (repeat_interleave), computed in double and rounded to f32.
//
// rotary(x [n, H, D], cos [n, D], sin [n, D]) -> like x: each interleaved
// pair (x0, x1) of each head becomes (x0 cos - x1 sin, x1 cos + x0 sin), in
// f32 as diffusers computes x * cos + rotate(x) * sin.
#include <cmath>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> tables_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  const auto dims = attr_ints(attrs, "axes_dims");
  const Shape& ids = in[0].shape;
  if (dims.empty()) return error("rope_axes_tables: axes_dims is empty");
  int64_t D = 0;
  for (int64_t d : dims) {
    if (d <= 0 || d % 2) return error("rope_axes_tables: each of axes_dims must be positive and even");
    D += d;
  }
  if (ids.size() != 2 || !ids[1].concrete() || ids[1].n != int64_t(dims.size()))
    return error("rope_axes_tables: ids must be [n, " + std::to_string(dims.size()) + "] (one column per axis), got " + shape_str(ids));
  if (in[0].dtype != DType::F32) return error("rope_axes_tables: ids must be F32");
  return std::vector<TypedShape>{{DType::F32, {ids[0], Dim::of(D)}}, {DType::F32, {ids[0], Dim::of(D)}}};
}

Status tables_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "rope_axes_tables", 0));
  const Tensor& ids = ctx.inputs[0];
  const auto dims = attr_ints(ctx.attrs, "axes_dims");
  const double theta = attr_float(ctx.attrs, "theta", 10000.0);
  if (ids.shape.size() != 2 || ids.dim(1) != int64_t(dims.size()) || ctx.outputs.size() != 2)
    return kernel_error(ctx, "rope_axes_tables", "ids must be [n, axes]");
  int64_t D = 0;
  for (int64_t d : dims) D += d;
  const int64_t n = ids.dim(0), A = ids.dim(1);
  ARCH_TRY_STATUS(expect_output(ctx, "rope_axes_tables", 0, Dims{n, D}));
  ARCH_TRY_STATUS(expect_output(ctx, "rope_axes_tables", 1, Dims{n, D}));
  for (int64_t r = 0; r < n; ++r) {
    float* c = ctx.outputs[0].f32() + r * D;
    float* s = ctx.outputs[1].f32() + r * D;
    int64_t off = 0;
    for (int64_t a = 0; a < A; ++a) {
      const double pos = double(ids.f32()[r * A + a]);
      for (int64_t k = 0; k < dims[size_t(a)] / 2; ++k) {
        // freq_k = 1 / theta^(2k / d), angle = pos * freq_k
        const double angle = pos * (1.0 / std::pow(theta, double(2 * k) / double(dims[size_t(a)])));
        c[off + 2 * k] = c[off + 2 * k + 1] = float(std::cos(angle));
        s[off + 2 * k] = s[off + 2 * k + 1] = float(std::sin(angle));
      }
      off += dims[size_t(a)];
    }
  }
  return {};
}

Result<std::vector<TypedShape>> rotary_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs&) {
  const Shape& x = in[0].shape;
  if (x.size() != 3 || !x[2].concrete() || x[2].n % 2)
    return error("rotary: x must be [n, heads, head_dim] with an even head_dim, got " + shape_str(x));
  for (size_t i = 1; i <= 2; ++i)
    if (in[i].shape.size() != 2 || in[i].shape[0] != x[0] || in[i].shape[1] != x[2])
      return error(std::string("rotary: ") + (i == 1 ? "cos " : "sin ") + shape_str(in[i].shape) + " is not [" +
                   dim_str(x[0]) + ", " + dim_str(x[2]) + "]");
  return one_output(x);
}

Status rotary_kernel(KernelContext& ctx) {
  for (size_t i = 0; i < 3; ++i) ARCH_TRY_STATUS(expect_f32(ctx, "rotary", i));
  const Tensor& X = ctx.inputs[0];
  if (X.shape.size() != 3 || X.dim(2) % 2) return kernel_error(ctx, "rotary", "x must be [n, heads, head_dim]");
  const int64_t n = X.dim(0), H = X.dim(1), D = X.dim(2);
  if (ctx.inputs[1].numel() != n * D || ctx.inputs[2].numel() != n * D)
    return kernel_error(ctx, "rotary", "cos and sin must be [n, head_dim]");
  ARCH_TRY_STATUS(expect_output(ctx, "rotary", 0, X.shape));
  for (int64_t r = 0; r < n; ++r) {
    const float* c = ctx.inputs[1].f32() + r * D;
    const float* s = ctx.inputs[2].f32() + r * D;
    for (int64_t h = 0; h < H; ++h) {
      const float* x = X.f32() + (r * H + h) * D;
      float* y = ctx.outputs[0].f32() + (r * H + h) * D;
      for (int64_t k = 0; k < D; k += 2) {
        // rotate(x) pairs (-x1, x0)
        y[k] = x[k] * c[k] + (-x[k + 1]) * s[k];
        y[k + 1] = x[k + 1] * c[k + 1] + x[k] * s[k + 1];
      }
    }
  }
  return {};
}

}  // namespace

void define_rope_axes(OpTable& t) {
  t.define(checked(OpDef{
               .name = "rope_axes_tables",
               .inputs = {"ids"},
               .attrs = {{"axes_dims", AttrSpec::IntList, nullptr}, {"theta", AttrSpec::Float, 10000.0}},
               .num_outputs = 2,
               .shape = tables_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "rope_axes_tables(ids [n, A]) -> (cos, sin) [n, sum(axes_dims)]: each axis's section rotated by its "
                      "column of ids at theta^(-2k/d), each frequency repeated for its pair",
           }),
           tables_kernel);
  t.define(checked(OpDef{
               .name = "rotary",
               .inputs = {"x", "cos", "sin"},
               .attrs = {},
               .shape = rotary_shape,
               .tolerance = {1e-5, 1e-6},
               .doc = "rotary(x [n, H, D], cos [n, D], sin [n, D]) -> like x: interleaved pairs rotated, x*cos + (-x1, x0)*sin",
           }),
           rotary_kernel);
}

}  // namespace arch

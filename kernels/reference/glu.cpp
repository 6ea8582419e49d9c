// glu(gate, up) attrs act, gate_start, up_start, width ->
//   act(gate[..., gate_start : gate_start + width]) * up[..., up_start : up_start + width]
// A gated linear unit (SwiGLU, GeGLU): the planner's fusion of
// mul(act(slice(x)), slice(x)) or mul(act(gate), up), one pass instead of
// up to four. gate and up may be one value (a merged gate/up projection).
// act is a unary activation's op name; the product is the reference's act
// then mul, so results are bit for bit those of the ops it replaces.
#include <algorithm>
#include <string>
#include <tuple>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

std::string act_of(const Attrs& attrs) {
  const Attrs& a = attr_json(attrs, "act");
  return a.is_string() ? a.get<std::string>() : std::string();
}

// Why columns [start, start + width) are not within a last dim of n, or
// nothing when they are.
std::string range_error(const char* input, int64_t start, int64_t width, int64_t n) {
  if (start < 0 || width < 0 || start + width > n)
    return std::string(input) + " columns [" + std::to_string(start) + ", " + std::to_string(start + width) +
           ") are not within its last dim of " + std::to_string(n);
  return {};
}

Result<std::vector<TypedShape>> glu_shape(std::span<const TypedShape> in, std::span<const bool>,
                                          const Attrs& attrs) {
  const Shape& gate = in[0].shape;
  const Shape& up = in[1].shape;
  if (in[0].dtype != DType::F32 || in[1].dtype != DType::F32) return error("glu: gate and up must be float32");
  if (!reference_activation(act_of(attrs)))
    return error("glu: act " + attr_json(attrs, "act").dump() + " is not an activation");
  if (gate.empty() || gate.size() != up.size() || !std::equal(gate.begin(), gate.end() - 1, up.begin()))
    return error("glu: gate " + shape_str(gate) + " and up " + shape_str(up) + " must agree but for the last dim");
  if (!gate.back().concrete() || !up.back().concrete()) return error("glu: the last dims must be concrete");
  const int64_t width = attr_int(attrs, "width", 0);
  for (auto [name, start, n] : {std::tuple{"gate", attr_int(attrs, "gate_start", 0), gate.back().n},
                                std::tuple{"up", attr_int(attrs, "up_start", 0), up.back().n}}) {
    std::string bad = range_error(name, start, width, n);
    if (!bad.empty()) return error("glu: " + bad);
  }
  Shape out = gate;
  out.back() = Dim::of(width);
  return one_output(out);
}

Status glu_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "glu", 0));
  ARCH_TRY_STATUS(expect_f32(ctx, "glu", 1));
  const Tensor& G = ctx.inputs[0];
  const Tensor& U = ctx.inputs[1];
  auto act = reference_activation(act_of(ctx.attrs));
  if (!act) return kernel_error(ctx, "glu", "act " + attr_json(ctx.attrs, "act").dump() + " is not an activation");
  if (G.shape.empty() || G.shape.size() != U.shape.size())
    return kernel_error(ctx, "glu", "gate " + dims_str(G.shape) + " and up " + dims_str(U.shape) + " disagree");
  const int64_t width = attr_int(ctx.attrs, "width", 0), gs = attr_int(ctx.attrs, "gate_start", 0),
                us = attr_int(ctx.attrs, "up_start", 0);
  const int64_t gn = G.shape.back(), un = U.shape.back(), rows = G.numel() / std::max<int64_t>(gn, 1);
  for (const std::string& bad : {range_error("gate", gs, width, gn), range_error("up", us, width, un)})
    if (!bad.empty()) return kernel_error(ctx, "glu", bad);
  if (U.numel() / std::max<int64_t>(un, 1) != rows)
    return kernel_error(ctx, "glu", "gate " + dims_str(G.shape) + " and up " + dims_str(U.shape) + " disagree");
  Dims want = G.shape;
  want.back() = width;
  ARCH_TRY_STATUS(expect_output(ctx, "glu", 0, want));
  const float* g = G.f32();
  const float* u = U.f32();
  float* y = ctx.outputs[0].f32();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t f = 0; f < width; ++f) y[r * width + f] = act(g[r * gn + gs + f]) * u[r * un + us + f];
  return {};
}

}  // namespace

void define_glu(OpTable& t) {
  t.define(checked(OpDef{
               .name = "glu",
               .inputs = {"gate", "up"},
               .attrs = {{"act", AttrSpec::Str, nullptr},
                         {"gate_start", AttrSpec::Int, 0},
                         {"up_start", AttrSpec::Int, 0},
                         {"width", AttrSpec::Int, nullptr}},
               .shape = glu_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "glu(gate, up) -> act(gate[..., gate_start:+width]) * up[..., up_start:+width], a gated "
                      "linear unit (the planner fuses act, mul and the slices of a merged gate/up into it)",
           }),
           glu_kernel);
}

}  // namespace arch

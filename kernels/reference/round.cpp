// round(x) attr dtype -> x's shape, F32: each element rounded to the nearest
// value `dtype` ("bf16" or "f16") holds (to nearest even, as torch casts),
// kept as F32. The host reference runs a graph under another engine's
// numerics by rounding where that engine stores a narrower type
// (engine/npu2/numerics.h inserts these).
#include <cstring>

#include "engine/core/quant.h"
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// The rounding for `dtype`, or null when it is not one this op knows.
float (*rounding(const Attrs& attrs))(float) {
  const Attrs& v = attr_json(attrs, "dtype");
  if (!v.is_string()) return nullptr;
  const std::string s = v.get<std::string>();
  if (s == "bf16") return [](float f) { return bf16_to_f32(f32_to_bf16(f)); };
  if (s == "f16") return [](float f) { return f16_to_f32(f32_to_f16(f)); };
  return nullptr;
}

Result<std::vector<TypedShape>> round_shape(std::span<const TypedShape> in, std::span<const bool>,
                                            const Attrs& attrs) {
  if (!rounding(attrs)) return error("round: dtype must be \"bf16\" or \"f16\", got " + attr_json(attrs, "dtype").dump());
  if (in[0].dtype != DType::F32) return error("round: x must be F32, got " + std::string(dtype_name(in[0].dtype)));
  return one_output(in[0].shape);
}

Status round_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "round", 0));
  float (*f)(float) = rounding(ctx.attrs);
  if (!f) return kernel_error(ctx, "round", "dtype must be \"bf16\" or \"f16\"");
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_output(ctx, "round", 0, X.shape));
  const int64_t n = X.numel();
  for (int64_t i = 0; i < n; ++i) ctx.outputs[0].f32()[i] = f(X.f32()[i]);
  return {};
}

}  // namespace

void define_round(OpTable& t) {
  t.define(checked(OpDef{
               .name = "round",
               .inputs = {"x"},
               .attrs = {{"dtype", AttrSpec::Str, nullptr}},
               .shape = round_shape,
               .tolerance = {0, 0},
               .doc = "round(x) -> x rounded to the nearest \"bf16\" or \"f16\" value (to nearest even), kept as F32",
           }),
           round_kernel);
}

}  // namespace arch

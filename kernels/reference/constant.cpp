// constant() attr value -> []: a 0-d float32 tensor holding `value`.
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> constant_shape(std::span<const TypedShape>,
                                                      std::span<const bool>, const Attrs&) {
  return one_output(Shape{});
}

static Status constant_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_output(ctx, "constant", 0, Dims{}));
  // out[] = value
  ctx.outputs[0].f32()[0] = float(attr_float(ctx.attrs, "value", 0.0));
  return {};
}

void define_constant(OpTable& t) {
  t.define(checked(OpDef{
               .name = "constant",
               .inputs = {},
               .attrs = {{"value", AttrSpec::Float, nullptr}},
               .shape = constant_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "constant() -> []: a 0-d float32 scalar holding attribute `value`",
           }),
           constant_kernel);
}

}  // namespace arch

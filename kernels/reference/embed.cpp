// embed(table [V, H], ids [...] i32) -> [..., H]: one table row per token id.
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

static Result<std::vector<TypedShape>> embed_shape(std::span<const TypedShape> in,
                                                   std::span<const bool>, const Attrs&) {
  const TypedShape& table = in[0];
  const TypedShape& ids = in[1];
  if (table.shape.size() != 2)
    return error("embed: table must be [vocab, hidden], got " + shape_str(table.shape));
  if (ids.dtype != DType::I32)
    return error("embed: ids must be I32, got " + std::string(dtype_name(ids.dtype)));
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  return one_output(out);
}

static Status embed_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "embed", 0));
  ARCH_TRY_STATUS(expect_i32(ctx, "embed", 1));
  const Tensor& table = ctx.inputs[0];  // [V, H]
  const Tensor& ids = ctx.inputs[1];    // [...]
  if (table.shape.size() != 2)
    return kernel_error(ctx, "embed", "table must be 2-d, got " + dims_str(table.shape));
  int64_t V = table.dim(0), H = table.dim(1);
  Dims want = ids.shape;
  want.push_back(H);
  ARCH_TRY_STATUS(expect_output(ctx, "embed", 0, want));
  float* out = ctx.outputs[0].f32();  // [n, H]
  for (int64_t t = 0; t < ids.numel(); ++t) {
    // out[t, :] = table[ids[t], :]
    int32_t id = ids.i32()[t];
    if (id < 0 || id >= V)
      return kernel_error(ctx, "embed", "id " + std::to_string(id) + " at row " + std::to_string(t) +
                                            " is out of range: the table has " + std::to_string(V) + " rows");
    std::memcpy(out + t * H, table.f32() + int64_t(id) * H, size_t(H) * sizeof(float));
  }
  return {};
}

void define_embed(OpTable& t) {
  t.define(checked(OpDef{
               .name = "embed",
               .inputs = {"table", "ids"},
               .attrs = {},
               .shape = embed_shape,
               .tolerance = {1e-6, 1e-6},
               .doc = "embed(table [V, H], ids [...] i32) -> [..., H]: gather the table row of each id",
           }),
           embed_kernel);
}

}  // namespace arch

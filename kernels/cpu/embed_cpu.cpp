// The cpu backend's embed: reads table rows in the type the checkpoint
// stores them (BF16, F16, Q8_0, Q4_0 interleaved or not, the k-quants), so a table shared
// with the output projection (tied weights) stays mapped once instead of
// widened to F32.
#include "engine/core/quant.h"
#include "kernels/cpu/tiles.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

Status embed_cpu(KernelContext& ctx) {
  const Tensor& table = ctx.inputs[0];  // [V, H]
  const Tensor& ids = ctx.inputs[1];
  if (table.shape.size() != 2 || ids.dtype != DType::I32)
    return kernel_error(ctx, "embed", "takes a 2-d table and I32 ids, got table " + dims_str(table.shape));
  const int64_t V = table.dim(0), H = table.dim(1);
  Dims want = ids.shape;
  want.push_back(H);
  ARCH_TRY_STATUS(expect_output(ctx, "embed", 0, want));
  const EmbedRows rows = embed_rows(ctx.attrs, V);
  for (int64_t t = 0; t < ids.numel(); ++t) {
    const int32_t id = ids.i32()[t];
    if (id < 0 || id >= rows.vocab)
      return kernel_error(ctx, "embed", "id " + std::to_string(id) + " at row " + std::to_string(t) +
                                            " is out of range: the table has " + std::to_string(rows.vocab) + " rows");
    if (id < rows.first || id >= rows.first + V) continue;  // another process's row: zeros
    widen_row(table, id - rows.first, ctx.outputs[0].f32() + t * H);
  }
  return {};
}

bool embed_takes(const Attrs&, size_t input, DType stored) {
  return input == 0 && (stored == DType::BF16 || stored == DType::F16 || is_block_quantized(stored));
}

// A table in tiles (a tied lm_head's, tiled for the matmul) is read as it
// is: widen_row knows every registered layout.
uint8_t embed_layout(const Attrs&, size_t input, const Tensor&) { return input == 0 ? kAnyLayout : 0; }

}  // namespace

void register_cpu_embed(OpTable& t) {
  t.add_kernel("embed", "cpu", embed_cpu, embed_takes);
  t.add_weight_layout("embed", "cpu", embed_layout);
}

}  // namespace arch

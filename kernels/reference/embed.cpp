// embed(table [V, H], ids [...] i32) -> [..., H]: one table row per token id.
// A process's part of a table split by rows (engine/distributed) holds rows
// [first_row, first_row + V) of `vocab`: the ids of other rows give zeros,
// and the processes' outputs summed are the whole table's.
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

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
  const EmbedRows rows = embed_rows(ctx.attrs, V);
  for (int64_t t = 0; t < ids.numel(); ++t) {
    // out[t, :] = table[ids[t], :]
    int32_t id = ids.i32()[t];
    if (id < 0 || id >= rows.vocab)
      return kernel_error(ctx, "embed", "id " + std::to_string(id) + " at row " + std::to_string(t) +
                                            " is out of range: the table has " + std::to_string(rows.vocab) + " rows");
    if (id < rows.first || id >= rows.first + V) continue;  // another process's row: zeros
    std::memcpy(out + t * H, table.f32() + int64_t(id - rows.first) * H, size_t(H) * sizeof(float));
  }
  return {};
}

// Its output's columns: those of the table; a partial sum over the table's
// rows: those rows, the rest of the vocabulary left to the others.
static Result<SplitAnswer> embed_split(const SplitQuery& q) {
  const Part& want = q.want[0];
  if (want.axis == kPartialSum) {
    SplitAnswer a{{Part{0, want.ranges}, Part::whole()}, q.attrs};
    a.contraction = q.in[0].shape[0].concrete() ? q.in[0].shape[0].n : 0;
    if (want.ranges.size() > 1) return error("embed: one range of the table's rows at most");
    if (!want.ranges.empty()) {
      a.attrs["first_row"] = want.ranges[0].first;
      a.attrs["vocab"] = a.contraction;
    }
    return a;
  }
  if (want.axis + 1 != int(q.out[0].shape.size())) return error("embed: only a part of its features is defined");
  return SplitAnswer{{Part{1, want.ranges}, Part::whole()}, q.attrs};
}

void define_embed(OpTable& t) {
  t.define(checked(OpDef{
               .name = "embed",
               .inputs = {"table", "ids"},
               // Set only by a split over processes (engine/distributed): a template never writes them.
               .attrs = {{"first_row", AttrSpec::Int, 0, /*planner_only=*/true},
                         {"vocab", AttrSpec::Int, 0, /*planner_only=*/true}},
               .shape = embed_shape,
               .tolerance = {1e-6, 1e-6},
               .split = embed_split,
               .doc = "embed(table [V, H], ids [...] i32) -> [..., H]: gather the table row of each id; a table of rows "
                      "[first_row, first_row + V) of vocab (0: V) gives zeros for the other ids",
           }),
           embed_kernel);
}

}  // namespace arch

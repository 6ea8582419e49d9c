// token_runs(tokens i32 [S]) attr token -> i32 [S]: each row whose token is
// `token` numbered by its run of such rows in the call (1, 2, ...), 0
// elsewhere: the groups attention lifts its causal mask within (an image's
// tokens, which Gemma 3 lets see each other: transformers' token_type_ids
// grouped into image blocks).
#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Result<std::vector<TypedShape>> token_runs_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs&) {
  if (in[0].shape.size() != 1 || in[0].dtype != DType::I32)
    return error("token_runs: tokens must be i32 [seq], got " + shape_str(in[0].shape));
  return one_output(in[0].shape, DType::I32);
}

Status token_runs_kernel(KernelContext& ctx) {
  if (ctx.inputs.size() != 1 || ctx.outputs.size() != 1) return kernel_error(ctx, "token_runs", "takes tokens and makes one output");
  const Tensor& T = ctx.inputs[0];
  if (T.dtype != DType::I32 || T.shape.size() != 1)
    return kernel_error(ctx, "token_runs", "tokens " + dims_str(T.shape) + " are not i32 [seq]");
  ARCH_TRY_STATUS(expect_output(ctx, "token_runs", 0, T.shape, DType::I32));
  const int32_t token = int32_t(attr_int(ctx.attrs, "token", -1));
  int32_t run = 0;
  bool inside = false;
  for (int64_t r = 0; r < T.dim(0); ++r) {
    const bool here = T.i32()[r] == token;
    if (here && !inside) ++run;
    inside = here;
    ctx.outputs[0].i32()[r] = here ? run : 0;
  }
  return {};
}

}  // namespace

void define_token_runs(OpTable& t) {
  t.define(checked(OpDef{
               .name = "token_runs",
               .inputs = {"tokens"},
               .attrs = {{"token", AttrSpec::Int, nlohmann::json()}},
               .shape = token_runs_shape,
               .tolerance = {0.0, 0.0},
               .fills = true,
               .doc = "token_runs(tokens i32 [S]) -> i32 [S]: the rows at `token` numbered by their run (1, 2, ...), 0 elsewhere (an image's tokens as one group)",
           }),
           token_runs_kernel);
}

}  // namespace arch

// all_reduce(x) -> x summed over every process a model is split over;
// all_gather(x) attrs axis, sizes -> each process's x (sizes[rank] along
// axis) put side by side along axis in rank order. What the tensor split
// (engine/distributed/tensor_split.h) puts after a partial sum and before
// an output made in parts; the processes are KernelOptions::collectives
// (one process alone: x itself).
// send(x) attr to -> x, sent to process `to`; recv(like) attrs from, dims ->
// [like's first dim, dims...] from process `from`: a pipeline's stages
// (engine/distributed/pipeline_split.h) handing on the hidden state.
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

Status all_reduce_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "all_reduce", 0));
  const Tensor& x = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_output(ctx, "all_reduce", 0, x.shape));
  std::memcpy(ctx.outputs[0].data, x.data, size_t(x.numel()) * 4);
  Collectives* c = ctx.options->collectives;
  if (!c) return {};
  if (Status s = c->all_reduce_sum(ctx.outputs[0].f32(), x.numel()); !s.ok())
    return kernel_error(ctx, "all_reduce", s.error().message);
  return {};
}

Result<std::vector<TypedShape>> all_gather_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                 const Attrs& attrs) {
  ARCH_TRY(size_t axis, normalize_axis("all_gather", attr_int(attrs, "axis", 0), in[0].shape.size()));
  int64_t total = 0;
  for (int64_t n : attr_ints(attrs, "sizes")) {
    if (n < 0) return error("all_gather: sizes must not be negative");
    total += n;
  }
  Shape out = in[0].shape;
  out[axis] = Dim::of(total);
  return one_output(out, in[0].dtype);
}

Status all_gather_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "all_gather", 0));
  const Tensor& x = ctx.inputs[0];
  auto axis = normalize_axis("all_gather", attr_int(ctx.attrs, "axis", 0), x.shape.size());
  if (!axis.ok()) return kernel_error(ctx, "all_gather", axis.error().message);
  const std::vector<int64_t> sizes = attr_ints(ctx.attrs, "sizes");
  Collectives* c = ctx.options->collectives;
  const int rank = c ? c->rank() : 0;
  if (size_t(rank) >= sizes.size() || sizes[size_t(rank)] != x.shape[*axis] || (!c && sizes.size() != 1))
    return kernel_error(ctx, "all_gather", "this process holds " + std::to_string(x.shape[*axis]) +
                                               " along axis " + std::to_string(*axis) + ", not its share of the sizes");
  Dims want = x.shape;
  int64_t total = 0;
  for (int64_t n : sizes) total += n;
  want[*axis] = total;
  ARCH_TRY_STATUS(expect_output(ctx, "all_gather", 0, want));
  // Each process's piece whole, one after another; then its rows of the
  // axis put in place: x as [outer, n, inner].
  const auto [outer, along, inner] = around_axis(x.shape, *axis);
  (void)along;
  std::vector<int64_t> bytes;
  for (int64_t n : sizes) bytes.push_back(outer * n * inner * 4);
  std::vector<float> pieces(size_t(outer * total * inner));
  if (c) {
    if (Status s = c->all_gather(x.data, bytes, pieces.data()); !s.ok())
      return kernel_error(ctx, "all_gather", s.error().message);
  } else {
    std::memcpy(pieces.data(), x.data, size_t(bytes[0]));
  }
  float* out = ctx.outputs[0].f32();
  const float* piece = pieces.data();
  int64_t at = 0;  // the piece's first index along the axis
  for (int64_t n : sizes) {
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (o * total + at) * inner, piece + o * n * inner, size_t(n * inner) * 4);
    piece += outer * n * inner;
    at += n;
  }
  return {};
}

Status send_kernel(KernelContext& ctx) {
  ARCH_TRY_STATUS(expect_f32(ctx, "send", 0));
  const Tensor& x = ctx.inputs[0];
  alias_storage(ctx.outputs[0], x);
  Collectives* c = ctx.options->collectives;
  if (!c) return kernel_error(ctx, "send", "the model is not split over processes");
  if (Status s = c->send(int(attr_int(ctx.attrs, "to", 0)), x.data, int64_t(x.nbytes())); !s.ok())
    return kernel_error(ctx, "send", s.error().message);
  return {};
}

Result<std::vector<TypedShape>> recv_shape(std::span<const TypedShape> in, std::span<const bool>, const Attrs& attrs) {
  if (in[0].shape.empty()) return error("recv: `like` must have a first dim (the rows)");
  Shape out{in[0].shape[0]};
  for (int64_t d : attr_ints(attrs, "dims")) {
    if (d < 1) return error("recv: dims must be positive");
    out.push_back(Dim::of(d));
  }
  return one_output(out);
}

Status recv_kernel(KernelContext& ctx) {
  Collectives* c = ctx.options->collectives;
  if (!c) return kernel_error(ctx, "recv", "the model is not split over processes");
  Tensor& out = ctx.outputs[0];
  if (Status s = c->recv(int(attr_int(ctx.attrs, "from", 0)), out.data, int64_t(out.nbytes())); !s.ok())
    return kernel_error(ctx, "recv", s.error().message);
  return {};
}

}  // namespace

void define_collectives(OpTable& t) {
  t.define(checked(OpDef{
               .name = "send",
               .inputs = {"x"},
               .attrs = {{"to", AttrSpec::Int, nullptr}},
               .shape = same_as_input("send"),
               .tolerance = {0, 0},
               .view = true,
               .doc = "send(x) -> x, sent to process `to` (a pipeline stage handing on its hidden state)",
           }),
           send_kernel);
  t.define(checked(OpDef{
               .name = "recv",
               .inputs = {"like"},
               .attrs = {{"from", AttrSpec::Int, nullptr}, {"dims", AttrSpec::IntList, nullptr}},
               .shape = recv_shape,
               .tolerance = {0, 0},
               .fills = true,
               .waits = true,
               .doc = "recv(like) -> [like's rows, dims...] f32 from process `from` (like: any input with the call's rows)",
           }),
           recv_kernel);
  t.define(checked(OpDef{
               .name = "all_reduce",
               .inputs = {"x"},
               .attrs = {},
               .shape = same_as_input("all_reduce"),
               .tolerance = {1e-5, 1e-6},
               .fills = true,
               .doc = "all_reduce(x) -> x summed over the processes the model is split over (one: x)",
           }),
           all_reduce_kernel);
  t.define(checked(OpDef{
               .name = "all_gather",
               .inputs = {"x"},
               .attrs = {{"axis", AttrSpec::Int, nullptr}, {"sizes", AttrSpec::IntList, nullptr}},
               .shape = all_gather_shape,
               .tolerance = {1e-6, 1e-6},
               .fills = true,
               .doc = "all_gather(x) -> each process's x (sizes[rank] along axis) side by side along axis, in rank order",
           }),
           all_gather_kernel);
}

}  // namespace arch

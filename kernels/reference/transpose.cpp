// transpose(x) attr perm -> x's dims in the order perm gives: a contiguous copy
// with the axes permuted, out[i_perm[0], ..., i_perm[r-1]] = x[i_0, ..., i_r-1]
// (torch's x.permute(perm).contiguous(); any dtype). perm is a permutation of
// 0 .. rank-1 (negative entries count from the end); any axis may be `seq`.
#include <cstring>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

// perm as axis indices, checked to be a permutation of `rank` axes.
Result<std::vector<size_t>> permutation(const Attrs& attrs, size_t rank) {
  const std::vector<int64_t> raw = attr_ints(attrs, "perm");
  auto list = [&raw] {
    std::string s;
    for (size_t i = 0; i < raw.size(); ++i) s += (i ? ", " : "") + std::to_string(raw[i]);
    return "[" + s + "]";
  };
  if (raw.size() != rank)
    return error("transpose: perm " + list() + " has " + std::to_string(raw.size()) + " entries, x has " +
                 std::to_string(rank) + " dim(s)");
  std::vector<size_t> perm;
  std::vector<bool> seen(rank, false);
  for (int64_t a : raw) {
    auto axis = normalize_axis("transpose", a, rank);
    if (!axis.ok()) return error(axis.error().message + " (perm " + list() + ")");
    if (seen[*axis]) return error("transpose: perm " + list() + " names axis " + std::to_string(*axis) + " twice");
    seen[*axis] = true;
    perm.push_back(*axis);
  }
  return perm;
}

Result<std::vector<TypedShape>> transpose_shape(std::span<const TypedShape> in, std::span<const bool>,
                                                const Attrs& attrs) {
  const Shape& x = in[0].shape;
  ARCH_TRY(std::vector<size_t> perm, permutation(attrs, x.size()));
  Shape out;
  for (size_t a : perm) out.push_back(x[a]);  // out dim k is x's dim perm[k]
  return one_output(out, in[0].dtype);
}

Status transpose_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "transpose", "input 0 is missing");
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_input(ctx, "transpose", 0, X.dtype));
  auto perm = permutation(ctx.attrs, X.shape.size());
  if (!perm.ok()) return error(ctx.where + ": " + perm.error().message);
  const size_t rank = perm->size();
  Dims want(rank);
  for (size_t k = 0; k < rank; ++k) want[k] = X.shape[(*perm)[k]];
  ARCH_TRY_STATUS(expect_output(ctx, "transpose", 0, want, X.dtype));
  // Walk the output in order (an odometer over its index); `src` follows the
  // matching element of x through x's stride of each permuted axis.
  std::vector<int64_t> x_stride(rank), stride(rank);
  for (size_t d = rank, s = 1; d-- > 0;) x_stride[d] = int64_t(s), s *= size_t(X.shape[d]);
  for (size_t k = 0; k < rank; ++k) stride[k] = x_stride[(*perm)[k]];
  const size_t esize = dtype_size(X.dtype);
  const auto* x = static_cast<const char*>(X.data);
  auto* out = static_cast<char*>(ctx.outputs[0].data);
  std::vector<int64_t> idx(rank, 0);
  int64_t src = 0;
  const int64_t n = numel(want);
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out + size_t(i) * esize, x + size_t(src) * esize, esize);  // out[idx] = x[idx unpermuted]
    for (size_t d = rank; d-- > 0;) {
      src += stride[d];
      if (++idx[d] < want[d]) break;
      src -= stride[d] * want[d];
      idx[d] = 0;
    }
  }
  return {};
}

}  // namespace

void define_transpose(OpTable& t) {
  t.define(checked(OpDef{
               .name = "transpose",
               .inputs = {"x"},
               .attrs = {{"perm", AttrSpec::IntList, nullptr}},
               .shape = transpose_shape,
               .tolerance = {1e-6, 1e-6},
               .moves_values = true,
               .doc = "transpose(x) -> x's dims in perm's order: a contiguous copy with the axes permuted (x.permute(perm))",
           }),
           transpose_kernel);
}

}  // namespace arch

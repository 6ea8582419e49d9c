// cast(x) attr dtype -> x's shape in `dtype` ("f32" or "i32"): I32 -> F32
// rounds to the nearest float (exact up to 2^24); F32 -> I32 truncates toward
// zero, as torch's .to(torch.int32); NaN and values outside int32's range give
// INT32_MIN, as torch does on x86 (where C++ leaves the conversion undefined).
// A cast to the input's own dtype is a copy.
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "kernels/reference/ops.h"
#include "kernels/reference/shape_rules.h"
#include "kernels/reference/split_rules.h"

namespace arch {

namespace {

std::optional<DType> target_dtype(const Attrs& attrs) {
  const Attrs& v = attr_json(attrs, "dtype");
  if (!v.is_string()) return std::nullopt;
  const std::string s = v.get<std::string>();
  if (s == "f32") return DType::F32;
  if (s == "i32") return DType::I32;
  return std::nullopt;
}

std::string bad_dtype(const Attrs& attrs) {
  return "cast: dtype must be \"f32\" or \"i32\", got " + attr_json(attrs, "dtype").dump();
}

Result<std::vector<TypedShape>> cast_shape(std::span<const TypedShape> in, std::span<const bool>,
                                           const Attrs& attrs) {
  std::optional<DType> to = target_dtype(attrs);
  if (!to) return error(bad_dtype(attrs));
  if (in[0].dtype != DType::F32 && in[0].dtype != DType::I32)
    return error("cast: x must be F32 or I32, got " + std::string(dtype_name(in[0].dtype)));
  return one_output(in[0].shape, *to);
}

int32_t f32_to_i32(float v) {
  // Truncate toward zero; [-2^31, 2^31) is what fits (2^31 itself does not).
  if (!(v >= -2147483648.0f && v < 2147483648.0f)) return std::numeric_limits<int32_t>::min();
  return int32_t(v);
}

Status cast_kernel(KernelContext& ctx) {
  if (ctx.inputs.empty()) return kernel_error(ctx, "cast", "input 0 is missing");
  const Tensor& X = ctx.inputs[0];
  ARCH_TRY_STATUS(expect_input(ctx, "cast", 0, X.dtype));
  if (X.dtype != DType::F32 && X.dtype != DType::I32)
    return kernel_error(ctx, "cast", "x must be F32 or I32, got " + std::string(dtype_name(X.dtype)));
  std::optional<DType> to = target_dtype(ctx.attrs);
  if (!to) return error(ctx.where + ": " + bad_dtype(ctx.attrs));
  ARCH_TRY_STATUS(expect_output(ctx, "cast", 0, X.shape, *to));
  const int64_t n = X.numel();
  Tensor& Y = ctx.outputs[0];
  if (X.dtype == *to) {
    if (n) std::memcpy(Y.data, X.data, X.nbytes());  // out = x
  } else if (*to == DType::F32) {
    for (int64_t i = 0; i < n; ++i) Y.f32()[i] = float(X.i32()[i]);  // out = float(x)
  } else {
    for (int64_t i = 0; i < n; ++i) Y.i32()[i] = f32_to_i32(X.f32()[i]);  // out = trunc(x)
  }
  return {};
}

}  // namespace

void define_cast(OpTable& t) {
  t.define(checked(OpDef{
               .name = "cast",
               .inputs = {"x"},
               .attrs = {{"dtype", AttrSpec::Str, nullptr}},
               .shape = cast_shape,
               .tolerance = {0, 0},
               .split = split_elementwise,
               .doc = "cast(x) -> x in dtype \"f32\" or \"i32\": I32 -> F32 exactly (to 2^24), F32 -> I32 truncating toward zero",
           }),
           cast_kernel);
}

}  // namespace arch

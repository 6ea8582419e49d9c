// Helpers the reference ops share: attribute readers with defaults, the
// checks every shape rule starts with, broadcasting, and the small run-time
// checks kernels make before they touch memory.
//
//   t.define(checked(OpDef{.name = "relu", .inputs = {"x"},
//                          .shape = same_as_input("relu"), ...}), relu_kernel);
//
// `checked` wraps the op's own shape rule so that it only ever sees the
// declared number of inputs (at least the fixed ones when the last input is
// variadic, "xs*"), every required input present, and every attribute present
// (or defaulted) with the declared kind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/op.h"

namespace arch {

// ---- attributes -------------------------------------------------------------
// Value-or-default readers: a missing or null attribute gives `def`. They never
// throw; a value of the wrong kind also gives `def` (the shape rule, wrapped by
// `checked`, has already refused it with a message).
double attr_float(const Attrs& a, std::string_view key, double def);
int64_t attr_int(const Attrs& a, std::string_view key, int64_t def);
bool attr_bool(const Attrs& a, std::string_view key, bool def);
std::string attr_str(const Attrs& a, std::string_view key, const std::string& def);
std::vector<int64_t> attr_ints(const Attrs& a, std::string_view key);  // missing: {}
// The attribute as JSON, or a null JSON value when missing.
const Attrs& attr_json(const Attrs& a, std::string_view key);

// ---- shape rules ------------------------------------------------------------
// Wrap def.shape with the checks every op shares: the input count, required
// inputs present, required attributes present, attribute kinds, no unknown
// attribute names. Errors read "rms_norm: attribute 'eps' is required".
OpDef checked(OpDef def);

// One dim as a message shows it: "64", "seq" or "ctx".
inline std::string dim_str(const Dim& d) {
  return d.concrete() ? std::to_string(d.n) : dim_symbol_name(d.sym);
}

// An axis attribute (negative counts from the end) as an index into a shape of
// `rank` dims, or an error naming the op. `extra` widens the range by that many
// (stack inserts a new axis: -(rank + 1) .. rank).
Result<size_t> normalize_axis(std::string_view op, int64_t axis, size_t rank, size_t extra = 0);

// The shape rule of a convolution over one sequence x [C, L] (conv1d,
// conv_transpose1d): weight and bias concrete, L concrete or a run-time
// dim; `dims` gives the output dims from concrete ones (or the fault).
// A run-time L stays itself where the convolution keeps the length
// (stride 1, "same" padding: a text encoder's [C, seq]), else becomes `_`.
using SequenceConvDims = std::function<Result<Dims>(const Dims& x, const Dims& w, const Dims* bias)>;
Result<std::vector<TypedShape>> sequence_conv_shape(std::string_view op, std::span<const TypedShape> in,
                                                    std::span<const bool> present, const SequenceConvDims& dims);

// A tensor of dims `d` viewed as [outer, n, inner] around `axis`: the
// product of the dims before it, its own, and the product after it.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView around_axis(const Dims& d, size_t axis);

// Whether optional input i is present (`present` may be shorter than `in`).
inline bool is_present(std::span<const bool> present, size_t i) {
  return i >= present.size() || present[i];
}

// numpy broadcasting of two shapes, right-aligned: equal dims, or one of them 1
// (a 0-d scalar [] broadcasts against anything). `seq` only matches `seq` or 1.
Result<Shape> broadcast(std::string_view op, const Shape& a, const Shape& b);

// The rule the norms share: x [..., D] and optional per-feature inputs
// (weight, bias) [D]; one output shaped like x.
Result<std::vector<TypedShape>> norm_shape(const std::string& op, std::span<const TypedShape> in,
                                           std::span<const bool> present);

// The shape rule of a unary op: one float output shaped like input i.
ShapeRule same_as_input(std::string op, size_t i = 0);

// One output of the given shape (float32 unless said).
inline std::vector<TypedShape> one_output(Shape s, DType t = DType::F32) {
  return {TypedShape{t, std::move(s)}};
}

// ---- kernels ----------------------------------------------------------------
// "<where>: <op>: <message>", the form every kernel error takes.
Error kernel_error(const KernelContext& ctx, std::string_view op, const std::string& message);
// Input i is present and holds float32 (the reference path converts weights).
Status expect_f32(const KernelContext& ctx, std::string_view op, size_t i);
// Input i is present and holds int32 (token ids, positions).
Status expect_i32(const KernelContext& ctx, std::string_view op, size_t i);
// Input i is present and holds `dtype` (the copying ops take any dtype).
Status expect_input(const KernelContext& ctx, std::string_view op, size_t i, DType dtype);
// Output i was preallocated as float32 (or `dtype`) with exactly `want` dims.
Status expect_output(const KernelContext& ctx, std::string_view op, size_t i, const Dims& want,
                     DType dtype = DType::F32);
// The view ops' output: x's storage (its dtype, data and owner) under the
// output's own shape.
inline void alias_storage(Tensor& out, const Tensor& x) {
  out.dtype = x.dtype;
  out.data = x.data;
  out.owner = x.owner;
  out.mapped = x.mapped;
}
// Whether optional input i is present at run time.
inline bool has_input(const KernelContext& ctx, size_t i) {
  return i < ctx.inputs.size() && ctx.inputs[i].data != nullptr;
}

}  // namespace arch

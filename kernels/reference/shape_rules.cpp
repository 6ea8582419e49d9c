#include "kernels/reference/shape_rules.h"

#include <algorithm>
#include <cmath>

namespace arch {

// ---- attributes -------------------------------------------------------------

namespace {

const Attrs* find_attr(const Attrs& a, std::string_view key) {
  if (!a.is_object()) return nullptr;
  auto it = a.find(key);  // a string_view: no std::string made per lookup
  if (it == a.end() || it->is_null()) return nullptr;
  return &*it;
}

bool is_integral_number(const Attrs& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18;  // 64.0 in a config is 64
}

int64_t as_int(const Attrs& v) {
  return v.is_number_integer() ? v.get<int64_t>() : int64_t(v.get<double>());
}

const char* kind_name(AttrSpec::Kind k) {
  switch (k) {
    case AttrSpec::Int: return "an int";
    case AttrSpec::Float: return "a float";
    case AttrSpec::Bool: return "a bool";
    case AttrSpec::Str: return "a string";
    case AttrSpec::Json: return "JSON";
    case AttrSpec::IntList: return "a list of ints";
  }
  return "?";
}

bool has_kind(const Attrs& v, AttrSpec::Kind k) {
  switch (k) {
    case AttrSpec::Int: return is_integral_number(v);
    case AttrSpec::Float: return v.is_number();
    case AttrSpec::Bool: return v.is_boolean();
    case AttrSpec::Str: return v.is_string();
    case AttrSpec::Json: return true;
    case AttrSpec::IntList:
      if (!v.is_array()) return false;
      for (const auto& e : v)
        if (!is_integral_number(e)) return false;
      return true;
  }
  return false;
}

std::string input_list(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", " : "") + names[i];
  return s;
}

}  // namespace

double attr_float(const Attrs& a, std::string_view key, double def) {
  const Attrs* v = find_attr(a, key);
  return v && v->is_number() ? v->get<double>() : def;
}

int64_t attr_int(const Attrs& a, std::string_view key, int64_t def) {
  const Attrs* v = find_attr(a, key);
  return v && is_integral_number(*v) ? as_int(*v) : def;
}

bool attr_bool(const Attrs& a, std::string_view key, bool def) {
  const Attrs* v = find_attr(a, key);
  return v && v->is_boolean() ? v->get<bool>() : def;
}

Result<std::vector<TypedShape>> sequence_conv_shape(std::string_view op, std::span<const TypedShape> in,
                                                    std::span<const bool> present, const SequenceConvDims& dims) {
  const bool has_bias = in.size() > 2 && is_present(present, 2);
  constexpr int64_t kStandIn = int64_t(1) << 20;  // a run-time length, for the arithmetic
  Shape x = in[0].shape;
  const bool per_call = x.size() == 2 && !x[1].concrete();
  const Dim length = per_call ? x[1] : Dim{};
  if (per_call) x[1] = Dim::of(kStandIn);
  static const char* names[] = {"x", "weight", "bias"};
  for (size_t i = 0; i < in.size() && i < 3; ++i)
    if ((i < 2 || has_bias) && !is_concrete(i == 0 ? x : in[i].shape))
      return error(std::string(op) + ": " + names[i] + " " + shape_str(in[i].shape) +
                   " must have concrete dims (x's length may be a run-time dim)");
  Dims b = has_bias ? concretize(in[2].shape, 0) : Dims{};
  auto out = dims(concretize(x, 0), concretize(in[1].shape, 0), has_bias ? &b : nullptr);
  if (!out.ok()) return error(std::string(op) + ": " + out.error().message);
  Shape o = shape_of(*out);
  if (per_call) o[1] = (*out)[1] == kStandIn ? length : Dim::dyn();
  return one_output(o);
}

AxisView around_axis(const Dims& d, size_t axis) {
  AxisView v;
  for (size_t k = 0; k < d.size(); ++k) {
    if (k < axis) v.outer *= d[k];
    else if (k == axis) v.n = d[k];
    else v.inner *= d[k];
  }
  return v;
}

std::string attr_str(const Attrs& a, std::string_view key, const std::string& def) {
  const Attrs* v = find_attr(a, key);
  return v && v->is_string() ? v->get<std::string>() : def;
}

std::vector<int64_t> attr_ints(const Attrs& a, std::string_view key) {
  std::vector<int64_t> out;
  const Attrs* v = find_attr(a, key);
  if (!v || !v->is_array()) return out;
  for (const auto& e : *v)
    if (is_integral_number(e)) out.push_back(as_int(e));
  return out;
}

const Attrs& attr_json(const Attrs& a, std::string_view key) {
  static const Attrs null_json;
  const Attrs* v = find_attr(a, key);
  return v ? *v : null_json;
}

// ---- shape rules ------------------------------------------------------------

OpDef checked(OpDef def) {
  ShapeRule rule = std::move(def.shape);
  def.shape = [name = def.name, inputs = def.inputs, specs = def.attrs, rule](
                  std::span<const TypedShape> in, std::span<const bool> present,
                  const Attrs& attrs) -> Result<std::vector<TypedShape>> {
    const bool variadic = !inputs.empty() && inputs.back().ends_with('*');
    const size_t fixed = variadic ? inputs.size() - 1 : inputs.size();
    size_t least = fixed;  // trailing optional inputs may be left off
    while (!variadic && least > 0 && inputs[least - 1].ends_with('?')) --least;
    if (variadic ? in.size() < fixed : (in.size() < least || in.size() > inputs.size()))
      return error(name + ": expects " + (variadic ? "at least " : "") + std::to_string(fixed) +
                   " input(s) (" + input_list(inputs) + "), got " + std::to_string(in.size()));
    for (size_t i = 0; i < in.size(); ++i) {
      const std::string& input = inputs[std::min(i, inputs.size() - 1)];
      if (input.ends_with('?') || is_present(present, i)) continue;
      // A variadic input is named like "xs[2]".
      std::string which = i < fixed ? input
                                    : input.substr(0, input.size() - 1) + "[" + std::to_string(i - fixed) + "]";
      return error(name + ": input '" + which + "' is required");
    }
    if (!attrs.is_null() && !attrs.is_object())
      return error(name + ": attributes must be a JSON object, got " + attrs.dump());
    for (const AttrSpec& s : specs) {
      const Attrs* v = find_attr(attrs, s.name);
      if (!v) {
        if (s.default_value.is_null() && s.kind != AttrSpec::Json)
          return error(name + ": attribute '" + s.name + "' is required");
        continue;
      }
      if (!has_kind(*v, s.kind))
        return error(name + ": attribute '" + s.name + "' must be " + kind_name(s.kind) +
                     ", got " + v->dump());
    }
    if (attrs.is_object())
      for (const auto& [key, value] : attrs.items()) {
        bool known = false;
        for (const AttrSpec& s : specs) known = known || s.name == key;
        if (!known) {
          std::string names;
          for (const AttrSpec& s : specs) names += (names.empty() ? "" : ", ") + s.name;
          return error(name + ": unknown attribute '" + key + "' (it takes: " +
                       (names.empty() ? "none" : names) + ")");
        }
      }
    return rule(in, present, attrs);
  };
  return def;
}

Result<Shape> broadcast(std::string_view op, const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // Right-aligned: dim i of the output pairs with a's and b's i-th from the end.
    const Dim one = Dim::of(1);
    Dim da = i < rank - a.size() ? one : a[i - (rank - a.size())];
    Dim db = i < rank - b.size() ? one : b[i - (rank - b.size())];
    if (da == db || db == one) out[i] = da;
    else if (da == one) out[i] = db;
    else
      return error(std::string(op) + ": shapes " + shape_str(a) + " and " + shape_str(b) +
                   " do not broadcast (dim " + std::to_string(i) + ": " + dim_str(da) +
                   " vs " + dim_str(db) + ")");
  }
  return out;
}

Result<std::vector<TypedShape>> norm_shape(const std::string& op, std::span<const TypedShape> in,
                                           std::span<const bool> present) {
  const Shape& x = in[0].shape;
  if (x.empty()) return error(op + ": x must have at least one dim, got []");
  static const char* names[] = {"x", "weight", "bias"};
  for (size_t i = 1; i < in.size(); ++i) {
    if (!is_present(present, i)) continue;
    if (in[i].shape.size() != 1 || in[i].shape[0] != x.back())
      return error(op + ": " + names[i] + " " + shape_str(in[i].shape) +
                   " does not match the last dim of x " + shape_str(x));
  }
  return one_output(x);
}

ShapeRule same_as_input(std::string op, size_t i) {
  return [op, i](std::span<const TypedShape> in, std::span<const bool>,
                 const Attrs&) -> Result<std::vector<TypedShape>> {
    if (i >= in.size()) return error(op + ": missing input " + std::to_string(i));
    return one_output(in[i].shape);
  };
}

Result<size_t> normalize_axis(std::string_view op, int64_t axis, size_t rank, size_t extra) {
  const int64_t n = int64_t(rank + extra);
  if (n == 0) return error(std::string(op) + ": x has no dims to take axis " + std::to_string(axis) + " of");
  if (axis < -n || axis >= n)
    return error(std::string(op) + ": axis " + std::to_string(axis) + " is out of range for " +
                 std::to_string(rank) + " dim(s)" + (extra ? " (a new axis: " : " (") +
                 std::to_string(-n) + " .. " + std::to_string(n - 1) + ")");
  return size_t(axis < 0 ? axis + n : axis);
}

// ---- kernels ----------------------------------------------------------------

Error kernel_error(const KernelContext& ctx, std::string_view op, const std::string& message) {
  return error(ctx.where + ": " + std::string(op) + ": " + message);
}

Status expect_input(const KernelContext& ctx, std::string_view op, size_t i, DType t) {
  if (i >= ctx.inputs.size())
    return kernel_error(ctx, op, "input " + std::to_string(i) + " is missing");
  const Tensor& x = ctx.inputs[i];
  if (!x.data && x.numel() != 0)
    return kernel_error(ctx, op, "input " + std::to_string(i) + " is missing");
  if (x.dtype != t)
    return kernel_error(ctx, op, "input " + std::to_string(i) + " must be " +
                                     std::string(dtype_name(t)) + ", got " +
                                     std::string(dtype_name(x.dtype)));
  return {};
}

Status expect_f32(const KernelContext& ctx, std::string_view op, size_t i) {
  return expect_input(ctx, op, i, DType::F32);
}

Status expect_i32(const KernelContext& ctx, std::string_view op, size_t i) {
  return expect_input(ctx, op, i, DType::I32);
}

Status expect_output(const KernelContext& ctx, std::string_view op, size_t i, const Dims& want,
                     DType dtype) {
  if (i >= ctx.outputs.size()) return kernel_error(ctx, op, "output " + std::to_string(i) + " is missing");
  const Tensor& y = ctx.outputs[i];
  if (y.dtype != dtype || y.shape != want || (!y.data && numel(want) != 0))
    return kernel_error(ctx, op, (i ? "output " + std::to_string(i) : std::string("output")) +
                                     " must be " + std::string(dtype_name(dtype)) + " " + dims_str(want) + ", got " +
                                     std::string(dtype_name(y.dtype)) + " " + dims_str(y.shape) +
                                     (y.data ? "" : " (unallocated)"));
  return {};
}

}  // namespace arch

// Op calls: tensor arguments, attributes checked and defaulted, the shape rule, output values.
#include "dsl/instantiator.h"

#include <cmath>
#include <memory>

#include "dsl/names.h"

namespace arch::dsl::detail {

Result<int> Instantiator::as_input(const Val& v, Loc loc, const std::string& what, bool optional,
                                   const std::string& reader) {
  switch (v.kind) {
    case Val::Tensor:
      if (v.transposed) return fail(loc, "W^T is only meaningful on the right of '@'");
      return v.tensor;
    case Val::Path: {
      if (v.transposed) return fail(loc, "W^T is only meaningful on the right of '@'");
      // Bound in the space whose names it is in.
      Space* saved = cur_;
      cur_ = spaces_.at(size_t(v.space)).get();
      auto bound = bind_weight(v.path, loc);
      cur_ = saved;
      ARCH_TRY(int id, std::move(bound));
      if (id < 0 && !optional) return fail(loc, what + ": optional weight " + v.path_str() + " is absent from the checkpoint");
      // Bound just now: where it is first read.
      if (id >= 0 && !g().weights.empty() && g().weights.back().value == id && g().weights.back().read_at.empty())
        g().weights.back().read_at = read_chain(reader.empty() ? what : reader, loc);
      return id;
    }
    case Val::Int:
    case Val::Float: {
      ARCH_TRY(Val c, call_op("constant", loc, {}, {{"value", Val::of_float(v.num())}}, {loc}));
      return c.tensor;
    }
    case Val::Null:
      if (optional) return -1;
      return fail(loc, what + " is null");
    default:
      return fail(loc, what + " must be a tensor, not " + v.describe());
  }
}

namespace {

Result<nlohmann::json> attr_value(const AttrSpec& spec, const Val& v) {
  using K = AttrSpec::Kind;
  switch (spec.kind) {
    case K::Int:
      if (v.kind == Val::Int) return nlohmann::json(v.i);
      if (v.kind == Val::Float && std::floor(v.f) == v.f) return nlohmann::json((long long)v.f);
      break;
    case K::Float:
      if (v.is_number()) return nlohmann::json(v.num());
      break;
    case K::Bool:
      if (v.kind == Val::Bool) return nlohmann::json(v.b);
      break;
    case K::Str:
      if (v.kind == Val::Str) return nlohmann::json(v.s);
      break;
    case K::Json:
      if (v.kind != Val::Tensor && v.kind != Val::Path) return v.to_json();
      break;
    case K::IntList:
      if (v.kind == Val::List) {
        bool ok = true;
        for (auto& x : v.list) ok &= x.kind == Val::Int || x.kind == Val::Seq;
        if (ok) return v.to_json();
      }
      break;
  }
  static const char* kinds[] = {"an int", "a float", "true or false", "a string", "a value", "a list of ints"};
  return error("must be " + std::string(kinds[spec.kind]) + ", not " + v.describe());
}

}  // namespace

Instantiator::R Instantiator::call_op(const std::string& name, Loc loc, std::vector<Val> args,
                                      const std::vector<std::pair<std::string, Val>>& kwargs,
                                      const std::vector<Loc>& kwarg_locs) {
  const OpDef* def = ops_.find(name);
  if (!def) return fail(loc, "no op '" + name + "' in this build");
  // A trailing '*' input takes the remaining arguments (a list argument is
  // spread): stack(xs*), concat(xs*).
  bool variadic = !def->inputs.empty() && def->inputs.back().back() == '*';
  if (variadic && args.size() == def->inputs.size() && args.back().kind == Val::List) {
    Val list = std::move(args.back());
    args.pop_back();
    args.insert(args.end(), list.list.begin(), list.list.end());
  }
  size_t fixed = def->inputs.size() - (variadic ? 1 : 0), required = 0;
  for (size_t k = 0; k < fixed; ++k) required += def->inputs[k].back() != '?';
  if (variadic) ++required;
  if ((!variadic && args.size() > def->inputs.size()) || args.size() < required)
    return fail(loc, name + "() takes " +
                         (variadic ? std::to_string(required) + " or more"
                          : required == def->inputs.size() ? std::to_string(required)
                                                           : std::to_string(required) + " to " + std::to_string(def->inputs.size())) +
                         " tensor argument" + (def->inputs.size() == 1 && !variadic ? "" : "s") + ", got " +
                         std::to_string(args.size()));
  Node node;
  node.op = name;
  node.loc = sloc(loc);
  size_t n_inputs = variadic ? args.size() : def->inputs.size();
  std::vector<TypedShape> in_types;
  std::unique_ptr<bool[]> present(new bool[n_inputs]);
  for (size_t k = 0; k < n_inputs; ++k) {
    std::string in_name = def->inputs[std::min(k, def->inputs.size() - 1)];
    bool optional = in_name.back() == '?';
    if (optional || in_name.back() == '*') in_name.pop_back();
    int id = -1;
    if (k < args.size()) {
      ARCH_TRY(id, as_input(args[k], loc, name + "(): argument '" + in_name + "'", optional, name + "'s " + in_name));
    }
    node.inputs.push_back(id);
    in_types.push_back(id >= 0 ? g().values[id].type : TypedShape{});
    present[k] = id >= 0;
  }
  node.attrs = nlohmann::json::object();
  for (size_t k = 0; k < kwargs.size(); ++k) {
    const auto& [key, v] = kwargs[k];
    Loc kl = k < kwarg_locs.size() ? kwarg_locs[k] : loc;
    const AttrSpec* spec = nullptr;
    for (auto& a : def->attrs)
      if (a.name == key && !a.planner_only) spec = &a;
    if (!spec) {
      std::vector<std::string> known;
      for (auto& a : def->attrs)
        if (!a.planner_only) known.push_back(a.name);
      return fail(kl, name + "() has no attribute '" + key + "'" + did_you_mean(key, known));
    }
    auto j = attr_value(*spec, v);
    if (!j.ok()) return fail(kl, name + "(): '" + key + "' " + j.error().message);
    node.attrs[key] = j.value();
  }
  for (auto& a : def->attrs) {
    if (node.attrs.contains(a.name) || a.planner_only) continue;
    if (a.default_value.is_null() && a.kind != AttrSpec::Json)
      return fail(loc, name + "() needs the attribute '" + a.name + ":'");
    node.attrs[a.name] = a.default_value;
  }
  auto outs = def->shape(in_types, std::span<const bool>(present.get(), in_types.size()), node.attrs);
  if (!outs.ok()) {
    if (auto e = weight_shape_error(name, loc, node.inputs, outs.error().message)) return *e;
    std::string shapes;
    for (size_t k = 0; k < in_types.size(); ++k)
      if (present[k]) shapes += (shapes.empty() ? "" : ", ") + shape_str(in_types[k].shape);
    return fail(loc, outs.error().message + " (inputs " + shapes + ")");
  }
  for (auto& ts : outs.value()) {
    Value v;
    v.type = ts;
    v.producer = int(g().nodes.size());
    v.loc = sloc(loc);
    node.outputs.push_back(g().add_value(v));
    provisional_.push_back(name);
  }
  g().nodes.push_back(std::move(node));
  if (g().nodes.back().outputs.size() == 1) return Val::of_tensor(g().nodes.back().outputs[0]);
  Val list;
  list.kind = Val::List;
  for (int o : g().nodes.back().outputs) list.list.push_back(Val::of_tensor(o));
  return list;
}

}  // namespace arch::dsl::detail

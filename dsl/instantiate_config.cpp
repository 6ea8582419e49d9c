// Config fields (from config.json, else defaults, on demand) and flags.
#include "dsl/instantiator.h"

namespace arch::dsl::detail {

namespace {

bool type_matches(const TypeRef& t, const Val& v) {
  auto elem_ok = [&](const Val& x) {
    // 1e30 is no int: past 2^53 a float cannot say which int it means.
    if (t.elem == "int")
      return x.kind == Val::Int || (x.kind == Val::Float && std::floor(x.f) == x.f && std::fabs(x.f) <= 9007199254740992.0);
    if (t.elem == "float") return x.is_number();
    if (t.elem == "bool") return x.kind == Val::Bool;
    if (t.elem == "str") return x.kind == Val::Str;
    return true;  // json
  };
  if (t.list) {
    if (v.kind != Val::List) return false;
    for (auto& x : v.list)
      if (!elem_ok(x)) return false;
    return true;
  }
  return elem_ok(v);
}

}  // namespace

namespace {

Val coerce(const TypeRef& t, Val v) {
  auto fix = [&](Val& x) {
    if (t.elem == "int" && x.kind == Val::Float) x = Val::of_int((long long)x.f);
    else if (t.elem == "float" && x.kind == Val::Int) x = Val::of_float(double(x.i));
  };
  if (t.list) for (auto& x : v.list) fix(x);
  else fix(v);
  return v;
}

}  // namespace

// Config fields resolve on demand, so a default may name a field declared
// after it (an importing template's fields come after the imported ones).
Status Instantiator::resolve_field(const ConfigField& f) {
  if (globals_.vars.count(f.name)) return {};
  if (!resolving_.insert(f.name).second)
    return fail(f.loc, "the default of '" + f.name + "' depends on itself");
  Val v;
  auto it = opt_.config.find(f.name);
  bool given = it != opt_.config.end() && !it->is_null();
  if (given) {
    v = val_from_json(*it);
    if (!type_matches(f.type, v))
      return fail(f.loc, "config.json gives '" + f.name + "' as " + v.describe() +
                             ", the template declares " + f.type.str());
  } else if (f.default_value) {
    ARCH_TRY(v, eval(*f.default_value, globals_));
    if (!(v.kind == Val::Null) && !type_matches(f.type, v))
      return fail(f.default_value->loc, "the default of '" + f.name + "' is " + v.describe() +
                                            ", the field is declared " + f.type.str());
  } else {
    return fail(f.loc, "config.json lacks '" + f.name + "', which this template requires (" +
                           f.type.str() + ", no default)");
  }
  resolving_.erase(f.name);
  globals_.vars[f.name] = coerce(f.type, std::move(v));
  return {};
}

Status Instantiator::resolve_config() {
  for (const auto& f : t_.config) ARCH_TRY_STATUS(resolve_field(f));
  for (const auto& f : t_.config) out_.config.emplace_back(f.name, globals_.vars.at(f.name));
  config_done_ = true;
  return {};
}

Status Instantiator::resolve_flags() {
  for (const auto& fl : t_.flags) {
    bool value;
    auto ov = opt_.flag_overrides.find(fl.name);
    if (ov != opt_.flag_overrides.end()) {
      value = ov->second;
    } else {
      ARCH_TRY(Val v, eval(*fl.value, globals_));
      if (v.kind != Val::Bool)
        return fail(fl.value->loc, "flag '" + fl.name + "' must be true or false, not " + v.describe());
      value = v.b;
    }
    globals_.vars[fl.name] = Val::of_bool(value);
    out_.flags.emplace_back(fl.name, value);
  }
  for (auto& [name, v] : opt_.flag_overrides) {
    bool known = false;
    for (auto& fl : t_.flags) known |= fl.name == name;
    if (!known) return error(t_.path + ": error: --flag " + name + ": the template has no such flag");
  }
  return {};
}

}  // namespace arch::dsl::detail

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
  if (cur_->globals.vars.count(f.name)) return {};
  if (!cur_->resolving.insert(f.name).second)
    return fail(f.loc, "the default of '" + f.name + "' depends on itself");
  Val v;
  auto it = cur_->config.find(f.name);
  bool given = it != cur_->config.end() && !it->is_null();
  if (given) {
    v = val_from_json(*it);
    if (!type_matches(f.type, v))
      return fail(f.loc, "config.json gives '" + f.name + "' as " + v.describe() +
                             ", the template declares " + f.type.str());
  } else if (f.default_value) {
    ARCH_TRY(v, eval(*f.default_value, cur_->globals));
    if (!(v.kind == Val::Null) && !type_matches(f.type, v))
      return fail(f.default_value->loc, "the default of '" + f.name + "' is " + v.describe() +
                                            ", the field is declared " + f.type.str());
  } else {
    return fail(f.loc, "config.json lacks '" + f.name + "', which this template requires (" +
                           f.type.str() + ", no default)");
  }
  cur_->resolving.erase(f.name);
  cur_->globals.vars[f.name] = coerce(f.type, std::move(v));
  return {};
}

// An imported space's fields are listed as `vision.hidden_size`.
Status Instantiator::resolve_config() {
  for (const auto& f : tpl().config) ARCH_TRY_STATUS(resolve_field(f));
  for (const auto& f : tpl().config) out_.config.emplace_back(join(cur_->name, f.name), cur_->globals.vars.at(f.name));
  cur_->config_done = true;
  return {};
}

Status Instantiator::resolve_flags() {
  for (const auto& fl : tpl().flags) {
    bool value;
    auto ov = cur_->flag_overrides.find(fl.name);
    if (ov != cur_->flag_overrides.end()) {
      value = ov->second;
    } else {
      ARCH_TRY(Val v, eval(*fl.value, cur_->globals));
      if (v.kind != Val::Bool)
        return fail(fl.value->loc, "flag '" + fl.name + "' must be true or false, not " + v.describe());
      value = v.b;
    }
    cur_->globals.vars[fl.name] = Val::of_bool(value);
    out_.flags.emplace_back(join(cur_->name, fl.name), value);
  }
  for (auto& [name, v] : cur_->flag_overrides) {
    bool known = false;
    for (auto& fl : tpl().flags) known |= fl.name == name;
    if (!known) return error(tpl().path + ": error: --flag " + name + ": the template has no such flag");
  }
  return {};
}

// The spaces `parent`'s template imports under names of their own, each
// with its config (the parent's config.json object the import names) and
// flags resolved, the ones they import in turn after them.
Status Instantiator::make_spaces(int parent) {
  for (const auto& ns : spaces_[size_t(parent)]->t->spaces) {
    auto s = std::make_unique<Space>();
    Space& p = *spaces_[size_t(parent)];
    s->t = ns.t.get();
    s->name = join(p.name, ns.name);
    s->parent = parent;
    std::string prefix;
    for (const auto& seg : ns.weight_prefix) prefix = join(prefix, seg);
    s->weight_prefix = join(p.weight_prefix, prefix);
    auto it = p.config.find(ns.config_field);
    if (it == p.config.end() || it->is_null()) s->config = nlohmann::json::object();
    else if (it->is_object()) s->config = *it;
    else
      return fail(ns.loc, "config.json's '" + ns.config_field + "' (the config of namespace " + ns.name +
                              ") is not an object");
    for (auto& [k, v] : opt_.flag_overrides)
      if (k.size() > s->name.size() && k.compare(0, s->name.size() + 1, s->name + ".") == 0 &&
          k.find('.', s->name.size() + 1) == std::string::npos)  // its own, not a namespace's within it
        s->flag_overrides[k.substr(s->name.size() + 1)] = v;
    spaces_.push_back(std::move(s));
    const int index = int(spaces_.size()) - 1;
    ARCH_TRY_STATUS(resolve_space(*spaces_.back()));
    ARCH_TRY_STATUS(make_spaces(index));
  }
  return {};
}

Status Instantiator::resolve_space(Space& s) {
  Space* saved = cur_;
  cur_ = &s;
  Status st = resolve_config();
  if (st.ok()) st = resolve_flags();
  cur_ = saved;
  return st;
}

Space* Instantiator::space_named(const std::string& name) const {
  const int here = index_of(cur_);
  for (const auto& s : spaces_)
    if (s->parent == here && s->name == join(cur_->name, name)) return s.get();
  return nullptr;
}

int Instantiator::index_of(const Space* s) const {
  for (size_t k = 0; k < spaces_.size(); ++k)
    if (spaces_[k].get() == s) return int(k);
  return -1;
}

bool Instantiator::tensor_exists(const Space& s, const std::string& path) const {
  return opt_.tensor_exists && opt_.tensor_exists(join(s.weight_prefix, path));
}

}  // namespace arch::dsl::detail

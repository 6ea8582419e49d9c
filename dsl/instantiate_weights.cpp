// Weight paths matched to the template's declarations (aliases first) and bound to values.
#include "dsl/instantiator.h"

namespace arch::dsl::detail {

namespace {

// Does `path` match `decl`'s pattern? Binds the pattern variables ({i}).
bool match_pattern(const std::vector<PathSeg>& pat, const std::vector<std::string>& path,
                   std::map<std::string, long long>& vars) {
  if (pat.size() != path.size()) return false;
  for (size_t k = 0; k < pat.size(); ++k) {
    const PathSeg& s = pat[k];
    if (s.kind == PathSeg::Any) continue;
    if (s.kind == PathSeg::Name && s.name != path[k]) return false;
    if (s.kind == PathSeg::Index && std::to_string(s.index) != path[k]) return false;
    if (s.kind == PathSeg::Interp) {
      const std::string& p = path[k];
      // A checkpoint's name may hold any digits: past 15 they are no layer.
      if (p.empty() || p.size() > 15 || p.find_first_not_of("0123456789") != std::string::npos) return false;
      long long x = std::stoll(p);
      auto it = vars.find(s.name);
      if (it != vars.end() && it->second != x) return false;
      vars[s.name] = x;
    }
  }
  return true;
}

}  // namespace

namespace {

std::vector<std::string> expand_pattern(const std::vector<PathSeg>& pat,
                                        const std::map<std::string, long long>& vars) {
  std::vector<std::string> out;
  for (auto& s : pat) {
    if (s.kind == PathSeg::Name) out.push_back(s.name);
    else if (s.kind == PathSeg::Index) out.push_back(std::to_string(s.index));
    else {
      auto it = vars.find(s.name);
      out.push_back(it == vars.end() ? "{" + s.name + "}" : std::to_string(it->second));
    }
  }
  return out;
}

}  // namespace

std::string joined(const std::vector<std::string>& p) {
  std::string s;
  for (size_t k = 0; k < p.size(); ++k) s += (k ? "." : "") + p[k];
  return s;
}

// A declaration's (or alias's) `if`, its pattern variables bound; none: true.
Result<bool> Instantiator::condition_holds(const WeightDecl& w, const std::map<std::string, long long>& vars) {
  if (!w.condition) return true;
  Env env;
  env.globals = &cur_->globals;
  for (auto& [k, x] : vars) env.vars[k] = Val::of_int(x);
  ARCH_TRY(Val c, eval(*w.condition, env));
  if (c.kind != Val::Bool)
    return fail(w.condition->loc, std::string(w.alias ? "an alias's" : "a weight's") +
                                      " condition must be true or false, not " + c.describe());
  return c.b;
}

Result<bool> Instantiator::weight_declared(const std::vector<std::string>& path, Loc loc,
                                           const WeightDecl** decl,
                                           std::map<std::string, long long>& vars, bool strict) {
  // A declaration whose condition fails gives way to a later one of the same
  // name (`w: [8] if big` / `w: [4] if not big`); only if none holds is it an error.
  const WeightDecl* unmet = nullptr;
  for (const auto& w : tpl().weights) {
    if (w.alias) continue;
    std::map<std::string, long long> v;
    if (!match_pattern(w.pattern, path, v)) continue;
    ARCH_TRY(bool holds, condition_holds(w, v));
    if (!holds) {
      if (!unmet) unmet = &w;
      continue;
    }
    *decl = &w;
    vars = v;
    return true;
  }
  if (unmet && strict)
    return fail(loc, "weight " + joined(path) + " is declared (" + file_of(root_, unmet->loc) + ":" +
                         std::to_string(unmet->loc.line) + ") only when its condition holds, and it does not here");
  return false;
}

// The name an alias gives `path`, if one whose condition holds matches it.
// An alias of a module (`alias model.norm = final_layer_norm`) maps every
// name under it: its pattern need only match the start of the path.
Result<std::optional<std::vector<std::string>>> Instantiator::alias_target(
    const std::vector<std::string>& path) {
  for (const auto& w : tpl().weights) {
    if (!w.alias || w.pattern.size() > path.size()) continue;
    std::map<std::string, long long> v;
    std::vector<std::string> head(path.begin(), path.begin() + (long)w.pattern.size());
    if (!match_pattern(w.pattern, head, v)) continue;
    ARCH_TRY(bool holds, condition_holds(w, v));
    if (!holds) continue;
    std::vector<std::string> out = expand_pattern(w.target, v);
    out.insert(out.end(), path.begin() + (long)w.pattern.size(), path.end());
    return std::optional<std::vector<std::string>>(std::move(out));
  }
  return std::optional<std::vector<std::string>>();
}

Result<int> Instantiator::bind_weight(const std::vector<std::string>& path, Loc loc) {
  // Follow aliases to the checkpoint's name. The tensor's declaration gives
  // its shape; where the target is not declared (a module alias mapping a
  // layout onto this family's names), the declaration of the name it
  // stands for does, the nearest to the target first.
  const WeightDecl* decl = nullptr;
  std::map<std::string, long long> vars;
  std::vector<std::string> tensor_path = path;
  for (int hop = 0;; ++hop) {
    ARCH_TRY(auto next, alias_target(tensor_path));
    if (!next) break;
    if (hop == 16) return fail(loc, "the aliases of weight " + joined(path) + " go round in a circle");
    const WeightDecl* d = nullptr;
    std::map<std::string, long long> v;
    ARCH_TRY(bool found, weight_declared(tensor_path, loc, &d, v, /*strict=*/false));
    if (found) decl = d, vars = v;
    tensor_path = std::move(*next);
  }
  {
    const WeightDecl* d = nullptr;
    std::map<std::string, long long> v;
    ARCH_TRY(bool found, weight_declared(tensor_path, loc, &d, v, /*strict=*/decl == nullptr));
    if (found) decl = d, vars = v;
  }
  if (!decl) {
    if (tensor_path != path)
      return fail(loc, "weight " + joined(path) + " stands for " + joined(tensor_path) +
                           ", and neither is declared in the template's weights { }");
    return fail(loc, "weight " + joined(path) + " is not declared in the template's weights { }");
  }
  // An imported space's names are the checkpoint's under its prefix.
  std::string declared = join(cur_->weight_prefix, joined(path));
  std::string tensor = join(cur_->weight_prefix, joined(tensor_path));
  if (decl->optional && !(opt_.tensor_exists && opt_.tensor_exists(tensor))) return -1;
  auto it = weight_ids_.find(tensor);
  if (it != weight_ids_.end()) return it->second;
  // The declared shape, in config terms, with the pattern variables bound.
  Env env;
  env.globals = &cur_->globals;
  for (auto& [k, x] : vars) env.vars[k] = Val::of_int(x);
  Shape shape;
  if (decl->shape_from_checkpoint) {
    std::optional<std::vector<int64_t>> dims;
    if (opt_.tensor_shape) dims = opt_.tensor_shape(tensor);
    if (!dims)
      return fail(loc, "weight " + tensor + " takes its shape from the checkpoint (" + file_of(root_, decl->loc) + ":" +
                           std::to_string(decl->loc.line) + ": [*]), and the checkpoint has no such tensor");
    for (int64_t n : *dims) shape.push_back(Dim::of(n));
  }
  for (auto& d : decl->shape) {
    ARCH_TRY(Val x, eval(*d, env));
    if (x.kind != Val::Int || x.i < 0)
      return fail(d->loc, "a weight's dim must be a non-negative int, not " + x.describe());
    shape.push_back(Dim::of(x.i));
  }
  Value v;
  v.name = tensor;
  v.type = {DType::F32, shape};
  v.loc = sloc(decl->loc);
  int id = g().add_value(v);
  provisional_.push_back("");
  used_names_.insert(tensor);
  g().weights.push_back({id, tensor, tensor == declared ? "" : declared, sloc(decl->loc), ""});
  weight_ids_[tensor] = id;
  return id;
}

std::string Instantiator::read_chain(const std::string& reader, Loc loc) {
  std::string out = reader + " in ";
  Loc here = loc;
  for (size_t k = calls_.size(); k-- > 0;) {
    out += calls_[k].first->name + " (" + str(sloc(here)) + ") <- ";
    here = calls_[k].second;
  }
  return out + g().name + " (" + str(sloc(here)) + ")";
}

std::optional<Error> Instantiator::weight_shape_error(const std::string& op, Loc loc, const std::vector<int>& inputs,
                                                      const std::string& refusal) {
  if (!opt_.tensor_shape) return std::nullopt;
  // The weight whose checkpoint shape its declaration misstates, else the first.
  const WeightRef* chosen = nullptr;
  Shape chosen_shape;
  for (int id : inputs) {
    const WeightRef* w = id >= 0 ? g().weight_of(id) : nullptr;
    if (!w) continue;
    auto dims = opt_.tensor_shape(w->tensor);
    if (!dims) continue;
    Shape have;
    for (int64_t n : *dims) have.push_back(Dim::of(n));
    const bool differs = have != g().values[size_t(id)].type.shape;
    if (!chosen || differs) chosen = w, chosen_shape = std::move(have);
    if (differs) break;
  }
  if (!chosen) return std::nullopt;
  const Shape& declared = g().values[size_t(chosen->value)].type.shape;
  std::string msg = chosen->tensor + (chosen->declared_as.empty() ? "" : " (read as " + chosen->declared_as + ")") +
                    " is " + shape_str(chosen_shape) + " in the checkpoint";
  msg += chosen_shape == declared ? " (declared at " + str(chosen->loc) + ")"
                                  : "; the template declares " + shape_str(declared) + " (" + str(chosen->loc) + ")";
  return Error{msg + "; " + refusal + "\n  at " + read_chain(op, loc)};
}

}  // namespace arch::dsl::detail

#include "dsl/instantiate.h"

#include <cmath>
#include <set>

#include "dsl/diagnostic.h"
#include "dsl/names.h"

namespace arch::dsl {

namespace {

struct Env {
  std::map<std::string, Val> vars;
  const Env* globals = nullptr;

  const Val* find(const std::string& n) const {
    auto it = vars.find(n);
    if (it != vars.end()) return &it->second;
    return globals ? globals->find(n) : nullptr;
  }
};

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : name.empty() ? prefix : prefix + "." + name;
}

class Instantiator {
 public:
  Instantiator(const Template& t, const InstantiateOptions& opt, const OpTable& ops)
      : t_(t), opt_(opt), ops_(ops) {}

  Result<Instance> run();

 private:
  using R = Result<Val>;

  Error fail(Loc loc, const std::string& msg) const { return diag(t_, loc, msg); }
  SourceLoc sloc(Loc loc) const { return {file_of(t_, loc), loc.line, loc.col}; }

  Status resolve_config();
  Status resolve_field(const ConfigField& f);
  Status resolve_flags();
  Status run_graph(const GraphDef& gd);
  Status exec(const Body& body, Env& env, Val* returned);
  Status exec_stmt(const Stmt& s, Env& env, Val* returned, bool& did_return);

  R eval(const Expr& e, Env& env);
  R eval_path(const Expr& e, Env& env);
  R eval_binary(const Expr& e, const Val& a, const Val& b);
  R eval_call(const Expr& e, Env& env);
  R call_builtin(const Expr& e, std::vector<Val>& args);
  R call_block(const Expr& e, const BlockDef& b, std::vector<Val>& args);
  R call_op(const std::string& op, Loc loc, std::vector<Val> args,
            const std::vector<std::pair<std::string, Val>>& kwargs,
            const std::vector<Loc>& kwarg_locs);
  Result<int> as_input(const Val& v, Loc loc, const std::string& what, bool optional);
  Result<int> bind_weight(const std::vector<std::string>& path, Loc loc);
  Result<bool> weight_declared(const std::vector<std::string>& path, Loc loc,
                               const WeightDecl** decl, std::map<std::string, long long>& vars);
  void finish_statement(size_t first_value, int result, const std::string& target);

  const Template& t_;
  const InstantiateOptions& opt_;
  const OpTable& ops_;

  Env globals_;
  Instance out_;
  Graph& g() { return out_.graph; }
  std::vector<std::string> provisional_;  // op name of each value until it is named
  std::set<std::string> used_names_;
  std::map<std::string, int> weight_ids_;  // tensor name → value id
  std::set<std::string> resolving_;  // config fields being resolved (cycle check)
  bool config_done_ = false;
  std::string prefix_;  // names of new values start with it (layers.3.mlp)
  std::string scope_;   // the loop scopes alone (layers.3)
  Env inputs_;          // the graph's inputs and seq, over the globals: what blocks see
  int block_depth_ = 0;
};

// ---- config and flags ------------------------------------------------------

bool type_matches(const TypeRef& t, const Val& v) {
  auto elem_ok = [&](const Val& x) {
    if (t.elem == "int") return x.kind == Val::Int || (x.kind == Val::Float && std::floor(x.f) == x.f);
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

Val coerce(const TypeRef& t, Val v) {
  auto fix = [&](Val& x) {
    if (t.elem == "int" && x.kind == Val::Float) x = Val::of_int((long long)x.f);
    else if (t.elem == "float" && x.kind == Val::Int) x = Val::of_float(double(x.i));
  };
  if (t.list) for (auto& x : v.list) fix(x);
  else fix(v);
  return v;
}

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

// ---- expressions -----------------------------------------------------------

Instantiator::R Instantiator::eval(const Expr& e, Env& env) {
  switch (e.kind) {
    case Expr::Number:
      return e.is_int ? Val::of_int((long long)e.number) : Val::of_float(e.number);
    case Expr::String: return Val::of_str(e.text);
    case Expr::Bool: return Val::of_bool(e.boolean);
    case Expr::Null: return Val{};
    case Expr::List: {
      Val v;
      v.kind = Val::List;
      for (auto& a : e.args) {
        ARCH_TRY(Val x, eval(*a, env));
        v.list.push_back(std::move(x));
      }
      return v;
    }
    case Expr::Path: return eval_path(e, env);
    case Expr::Call: return eval_call(e, env);
    case Expr::Transpose: {
      ARCH_TRY(Val v, eval(*e.args[0], env));
      if (v.kind != Val::Tensor && v.kind != Val::Path)
        return fail(e.loc, "^T transposes a tensor, not " + v.describe());
      v.transposed = !v.transposed;
      return v;
    }
    case Expr::Index: {
      ARCH_TRY(Val base, eval(*e.args[0], env));
      ARCH_TRY(Val idx, eval(*e.args[1], env));
      if (base.kind == Val::List) {
        if (idx.kind != Val::Int) return fail(e.args[1]->loc, "a list index must be an int, not " + idx.describe());
        long long n = (long long)base.list.size(), k = idx.i < 0 ? idx.i + n : idx.i;
        if (k < 0 || k >= n)
          return fail(e.args[1]->loc, "index " + std::to_string(idx.i) + " is out of range for a list of " + std::to_string(n));
        return base.list[size_t(k)];
      }
      if (base.kind == Val::Json) {
        if (idx.kind != Val::Str) return fail(e.args[1]->loc, "a json field is looked up by a string");
        auto it = base.json.find(idx.s);
        return it == base.json.end() ? Val{} : val_from_json(*it);
      }
      return fail(e.loc, "cannot index " + base.describe());
    }
    case Expr::Unary: {
      ARCH_TRY(Val v, eval(*e.args[0], env));
      if (e.text == "not") {
        if (v.kind != Val::Bool) return fail(e.loc, "'not' needs true or false, not " + v.describe());
        return Val::of_bool(!v.b);
      }
      if (v.kind == Val::Int) return Val::of_int(-v.i);
      if (v.kind == Val::Float) return Val::of_float(-v.f);
      if (v.kind == Val::Tensor || v.kind == Val::Path) return call_op("neg", e.loc, {v}, {}, {});
      return fail(e.loc, "cannot negate " + v.describe());
    }
    case Expr::Binary: {
      // and/or short-circuit so `exists(x) and x...` style guards work.
      ARCH_TRY(Val a, eval(*e.args[0], env));
      if (e.text == "and" || e.text == "or") {
        if (a.kind != Val::Bool) return fail(e.args[0]->loc, "'" + e.text + "' needs true or false, not " + a.describe());
        if (e.text == "and" && !a.b) return a;
        if (e.text == "or" && a.b) return a;
        ARCH_TRY(Val b, eval(*e.args[1], env));
        if (b.kind != Val::Bool) return fail(e.args[1]->loc, "'" + e.text + "' needs true or false, not " + b.describe());
        return b;
      }
      ARCH_TRY(Val b, eval(*e.args[1], env));
      return eval_binary(e, a, b);
    }
    case Expr::Cond: {
      ARCH_TRY(Val c, eval(*e.args[0], env));
      if (c.kind != Val::Bool) return fail(e.args[0]->loc, "the condition must be true or false, not " + c.describe());
      return eval(*e.args[c.b ? 1 : 2], env);
    }
  }
  return fail(e.loc, "cannot evaluate this expression");
}

Instantiator::R Instantiator::eval_path(const Expr& e, Env& env) {
  const PathSeg& head = e.path[0];
  const Val* v = env.find(head.name);
  if (!v && !config_done_)
    for (const auto& f : t_.config)
      if (f.name == head.name) {
        ARCH_TRY_STATUS(resolve_field(f));
        v = env.find(head.name);
      }
  bool weight_root = false;  // `layernorm`: the first segment of declared weights
  for (const auto& w : t_.weights) weight_root = weight_root || (!w.pattern.empty() && w.pattern[0].name == head.name);
  if (!v && e.path.size() == 1 && !weight_root) {
    std::vector<std::string> known;
    for (const Env* s = &env; s; s = s->globals)
      for (auto& [n, x] : s->vars) known.push_back(n);
    return fail(e.loc, "undefined name '" + head.name + "'" + did_you_mean(head.name, known));
  }
  Val out;
  if (v && v->kind == Val::Json) {
    // rope_scaling.factor: a field of a json config value
    out = *v;
    for (size_t k = 1; k < e.path.size(); ++k) {
      if (e.path[k].kind != PathSeg::Name) return fail(e.loc, "a json field is named, not indexed");
      if (out.kind != Val::Json) return Val{};
      auto it = out.json.find(e.path[k].name);
      out = it == out.json.end() ? Val{} : val_from_json(*it);
    }
    return out;
  }
  if (v && v->kind != Val::Path && e.path.size() > 1)
    return fail(e.loc, "'" + head.name + "' is " + v->describe() + ", it has no member '" +
                           (e.path[1].kind == PathSeg::Name ? e.path[1].name : std::string("...")) + "'");
  if (v && e.path.size() == 1) return *v;
  out.kind = Val::Path;
  if (v) out.path = v->path;
  else out.path.push_back(head.name);
  for (size_t k = 1; k < e.path.size(); ++k) {
    const PathSeg& s = e.path[k];
    if (s.kind == PathSeg::Name) out.path.push_back(s.name);
    else if (s.kind == PathSeg::Index) out.path.push_back(std::to_string(s.index));
    else {
      ARCH_TRY(Val x, eval(*s.expr, env));
      if (x.kind == Val::Int) out.path.push_back(std::to_string(x.i));
      else if (x.kind == Val::Str) out.path.push_back(x.s);
      else return fail(s.expr->loc, "a '{...}' in a weight name must be an int or a str, not " + x.describe());
    }
  }
  return out;
}

Instantiator::R Instantiator::eval_binary(const Expr& e, const Val& a, const Val& b) {
  const std::string& op = e.text;
  if ((op == "==" || op == "!=") && (a.kind == Val::Null || b.kind == Val::Null))
    return Val::of_bool((a.kind == b.kind) == (op == "=="));
  bool tensorish = a.kind == Val::Tensor || a.kind == Val::Path || b.kind == Val::Tensor || b.kind == Val::Path;
  if (tensorish) {
    if (op == "@") {
      if (a.transposed) return fail(e.args[0]->loc, "^T on the left of @ is not supported");
      Val rhs = b;
      bool tb = rhs.transposed;
      rhs.transposed = false;
      return call_op("matmul", e.loc, {a, rhs}, {{"transpose_b", Val::of_bool(tb)}}, {e.loc});
    }
    static const std::map<std::string, std::string> ops = {{"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}};
    auto it = ops.find(op);
    if (it == ops.end()) return fail(e.loc, "operator '" + op + "' does not apply to tensors");
    return call_op(it->second, e.loc, {a, b}, {}, {});
  }
  if (op == "==" || op == "!=") {
    bool eq;
    if (a.is_number() && b.is_number()) eq = a.num() == b.num();
    else if (a.kind != b.kind) eq = false;
    else if (a.kind == Val::Null) eq = true;
    else eq = a.to_json() == b.to_json();
    return Val::of_bool(op == "==" ? eq : !eq);
  }
  if (a.kind == Val::Str && b.kind == Val::Str && op == "+") return Val::of_str(a.s + b.s);
  if (a.kind == Val::List && b.kind == Val::List && op == "+") {
    Val v = a;
    v.list.insert(v.list.end(), b.list.begin(), b.list.end());
    return v;
  }
  if (!a.is_number() || !b.is_number())
    return fail(e.loc, "operator '" + op + "' needs numbers, not " + a.describe() + " and " + b.describe());
  bool ints = a.kind == Val::Int && b.kind == Val::Int;
  double x = a.num(), y = b.num();
  if (op == "<") return Val::of_bool(x < y);
  if (op == "<=") return Val::of_bool(x <= y);
  if (op == ">") return Val::of_bool(x > y);
  if (op == ">=") return Val::of_bool(x >= y);
  if (op == "+") return ints ? Val::of_int(a.i + b.i) : Val::of_float(x + y);
  if (op == "-") return ints ? Val::of_int(a.i - b.i) : Val::of_float(x - y);
  if (op == "*") return ints ? Val::of_int(a.i * b.i) : Val::of_float(x * y);
  if (op == "/" || op == "//" || op == "%") {
    if (y == 0) return fail(e.loc, "division by zero");
    if (op == "/") return Val::of_float(x / y);
    // As in Python: // rounds toward minus infinity, % takes the divisor's sign.
    if (op == "//") {
      if (!ints) return Val::of_float(std::floor(x / y));
      long long q = a.i / b.i;
      return Val::of_int(q - (a.i % b.i != 0 && (a.i < 0) != (b.i < 0)));
    }
    if (ints) {
      long long r = a.i % b.i;
      return Val::of_int(r != 0 && (r < 0) != (b.i < 0) ? r + b.i : r);
    }
    double r = std::fmod(x, y);
    return Val::of_float(r != 0 && (r < 0) != (y < 0) ? r + y : r);
  }
  return fail(e.loc, "operator '" + op + "' needs tensors");
}

Instantiator::R Instantiator::eval_call(const Expr& e, Env& env) {
  std::vector<Val> args;
  for (auto& a : e.args) {
    ARCH_TRY(Val v, eval(*a, env));
    args.push_back(std::move(v));
  }
  for (const auto& b : t_.blocks)
    if (b.name == e.text) {
      if (!e.kwargs.empty()) return fail(e.kwarg_locs[0], "a block takes positional arguments only");
      return call_block(e, b, args);
    }
  if (is_builtin(e.text)) return call_builtin(e, args);
  if (ops_.find(e.text)) {
    std::vector<std::pair<std::string, Val>> kwargs;
    for (auto& [k, x] : e.kwargs) {
      ARCH_TRY(Val v, eval(*x, env));
      kwargs.emplace_back(k, std::move(v));
    }
    return call_op(e.text, e.loc, std::move(args), kwargs, e.kwarg_locs);
  }
  std::vector<std::string> known = ops_.names();
  for (auto& b : t_.blocks) known.push_back(b.name);
  for (auto& b : builtin_names()) known.push_back(b);
  return fail(e.loc, "unknown function '" + e.text + "'" + did_you_mean(e.text, known));
}

Instantiator::R Instantiator::call_builtin(const Expr& e, std::vector<Val>& a) {
  const std::string& f = e.text;
  auto want = [&](size_t n) -> Status {
    if (a.size() != n)
      return fail(e.loc, f + "() takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                             ", got " + std::to_string(a.size()));
    return {};
  };
  if (f == "exists") {
    ARCH_TRY_STATUS(want(1));
    if (a[0].kind != Val::Path) return fail(e.loc, "exists() takes a weight name, not " + a[0].describe());
    return Val::of_bool(opt_.tensor_exists && opt_.tensor_exists(a[0].path_str()));
  }
  if (f == "len") {
    ARCH_TRY_STATUS(want(1));
    if (a[0].kind == Val::List) return Val::of_int((long long)a[0].list.size());
    if (a[0].kind == Val::Str) return Val::of_int((long long)a[0].s.size());
    if (a[0].kind == Val::Null) return Val::of_int(0);
    if (a[0].kind == Val::Json) return Val::of_int((long long)a[0].json.size());
    return fail(e.loc, "len() of " + a[0].describe());
  }
  if (f == "sqrt" || f == "int" || f == "float") {
    ARCH_TRY_STATUS(want(1));
    // sqrt of a tensor is the sqrt op; of a number, this builtin.
    if (f == "sqrt" && (a[0].kind == Val::Tensor || a[0].kind == Val::Path))
      return call_op("sqrt", e.loc, {a[0]}, {}, {});
    if (!a[0].is_number()) return fail(e.loc, f + "() needs a number, not " + a[0].describe());
    if (f == "sqrt") return Val::of_float(std::sqrt(a[0].num()));
    if (f == "int") return Val::of_int((long long)a[0].num());
    return Val::of_float(a[0].num());
  }
  if (f == "min" || f == "max") {
    ARCH_TRY_STATUS(want(2));
    if (!a[0].is_number() || !a[1].is_number()) return fail(e.loc, f + "() needs numbers");
    bool first = f == "min" ? a[0].num() <= a[1].num() : a[0].num() >= a[1].num();
    return first ? a[0] : a[1];
  }
  if (f == "contains") {
    // contains(list, x): is x an item of the list (mlp_only_layers, ...)
    ARCH_TRY_STATUS(want(2));
    if (a[0].kind == Val::Null) return Val::of_bool(false);
    if (a[0].kind != Val::List) return fail(e.loc, "contains() looks in a list, not " + a[0].describe());
    for (const auto& x : a[0].list)
      if (x.to_json() == a[1].to_json() || (x.is_number() && a[1].is_number() && x.num() == a[1].num()))
        return Val::of_bool(true);
    return Val::of_bool(false);
  }
  if (f == "str") {
    // str(n): an int as its decimal string (a str stays itself), for json
    // objects keyed by number: per_layer_config[str(i)]
    ARCH_TRY_STATUS(want(1));
    if (a[0].kind == Val::Int) return Val::of_str(std::to_string(a[0].i));
    if (a[0].kind == Val::Str) return a[0];
    return fail(e.loc, "str() takes an int or a str, not " + a[0].describe());
  }
  if (f == "error") {
    // error("...") stops instantiation with the template's own message
    ARCH_TRY_STATUS(want(1));
    return fail(e.loc, a[0].kind == Val::Str ? a[0].s : a[0].describe());
  }
  if (f == "default") {
    // default(x, d): x unless it is null
    ARCH_TRY_STATUS(want(2));
    return a[0].kind == Val::Null ? a[1] : a[0];
  }
  return fail(e.loc, "unknown builtin '" + f + "'");
}

Instantiator::R Instantiator::call_block(const Expr& e, const BlockDef& b, std::vector<Val>& args) {
  if (args.size() != b.params.size())
    return fail(e.loc, "block '" + b.name + "' takes " + std::to_string(b.params.size()) +
                           " arguments, got " + std::to_string(args.size()));
  if (++block_depth_ > 32) return fail(e.loc, "blocks nested too deeply (a block calls itself?)");
  // A block sees its parameters, the graph's inputs (and seq), the config
  // and the flags; not the caller's locals.
  Env env;
  env.globals = &inputs_;
  for (size_t k = 0; k < args.size(); ++k) env.vars[b.params[k]] = args[k];
  // Values made in a block are named scope.block.name (layers.3.mlp.gate),
  // however deeply blocks call blocks.
  std::string saved = prefix_;
  prefix_ = join(scope_, b.name);
  Val ret;
  Status st = exec(b.body, env, &ret);
  prefix_ = saved;
  --block_depth_;
  if (!st.ok()) return st.error();
  return ret;
}

// ---- weights ---------------------------------------------------------------

// Does `path` match `decl`'s pattern? Binds the pattern variables ({i}).
bool match_pattern(const std::vector<PathSeg>& pat, const std::vector<std::string>& path,
                   std::map<std::string, long long>& vars) {
  if (pat.size() != path.size()) return false;
  for (size_t k = 0; k < pat.size(); ++k) {
    const PathSeg& s = pat[k];
    if (s.kind == PathSeg::Name && s.name != path[k]) return false;
    if (s.kind == PathSeg::Index && std::to_string(s.index) != path[k]) return false;
    if (s.kind == PathSeg::Interp) {
      const std::string& p = path[k];
      if (p.empty() || p.find_first_not_of("0123456789") != std::string::npos) return false;
      long long x = std::stoll(p);
      auto it = vars.find(s.name);
      if (it != vars.end() && it->second != x) return false;
      vars[s.name] = x;
    }
  }
  return true;
}

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

std::string joined(const std::vector<std::string>& p) {
  std::string s;
  for (size_t k = 0; k < p.size(); ++k) s += (k ? "." : "") + p[k];
  return s;
}

Result<bool> Instantiator::weight_declared(const std::vector<std::string>& path, Loc loc,
                                           const WeightDecl** decl,
                                           std::map<std::string, long long>& vars) {
  // Aliases first: `alias lm_head.weight = model.embed_tokens.weight if tied`.
  // A declaration whose condition fails gives way to a later one of the same
  // name (`w: [8] if big` / `w: [4] if not big`); only if none holds is it an error.
  const WeightDecl* unmet = nullptr;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& w : t_.weights) {
      if (w.alias != (pass == 0)) continue;
      std::map<std::string, long long> v;
      if (!match_pattern(w.pattern, path, v)) continue;
      if (w.condition) {
        Env env;
        env.globals = &globals_;
        for (auto& [k, x] : v) env.vars[k] = Val::of_int(x);
        ARCH_TRY(Val c, eval(*w.condition, env));
        if (c.kind != Val::Bool) return fail(w.condition->loc, "a weight's condition must be true or false, not " + c.describe());
        if (!c.b) {
          if (pass == 1 && !unmet) unmet = &w;
          continue;
        }
      }
      *decl = &w;
      vars = v;
      return true;
    }
  }
  if (unmet)
    return fail(loc, "weight " + joined(path) + " is declared (" + file_of(t_, unmet->loc) + ":" +
                         std::to_string(unmet->loc.line) + ") only when its condition holds, and it does not here");
  return false;
}

Result<int> Instantiator::bind_weight(const std::vector<std::string>& path, Loc loc) {
  const WeightDecl* decl = nullptr;
  std::map<std::string, long long> vars;
  ARCH_TRY(bool found, weight_declared(path, loc, &decl, vars));
  if (!found)
    return fail(loc, "weight " + joined(path) + " is not declared in the template's weights { }");
  std::string declared = joined(path);
  std::vector<std::string> tensor_path = path;
  if (decl->alias) {
    tensor_path = expand_pattern(decl->target, vars);
    const WeightDecl* target = nullptr;
    std::map<std::string, long long> tv;
    ARCH_TRY(bool ok, weight_declared(tensor_path, decl->loc, &target, tv));
    if (!ok || target->alias)
      return fail(decl->loc, "alias target " + joined(tensor_path) + " is not a declared weight");
    decl = target;
    vars = tv;
  }
  std::string tensor = joined(tensor_path);
  if (decl->optional && !(opt_.tensor_exists && opt_.tensor_exists(tensor))) return -1;
  auto it = weight_ids_.find(tensor);
  if (it != weight_ids_.end()) return it->second;
  // The declared shape, in config terms, with the pattern variables bound.
  Env env;
  env.globals = &globals_;
  for (auto& [k, x] : vars) env.vars[k] = Val::of_int(x);
  Shape shape;
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
  g().weights.push_back({id, tensor, tensor == declared ? "" : declared, sloc(decl->loc)});
  weight_ids_[tensor] = id;
  return id;
}

// ---- ops -------------------------------------------------------------------

Result<int> Instantiator::as_input(const Val& v, Loc loc, const std::string& what, bool optional) {
  switch (v.kind) {
    case Val::Tensor:
      if (v.transposed) return fail(loc, "W^T is only meaningful on the right of '@'");
      return v.tensor;
    case Val::Path: {
      if (v.transposed) return fail(loc, "W^T is only meaningful on the right of '@'");
      ARCH_TRY(int id, bind_weight(v.path, loc));
      if (id < 0 && !optional) return fail(loc, what + ": optional weight " + v.path_str() + " is absent from the checkpoint");
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
      ARCH_TRY(id, as_input(args[k], loc, name + "(): argument '" + in_name + "'", optional));
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
      if (a.name == key) spec = &a;
    if (!spec) {
      std::vector<std::string> known;
      for (auto& a : def->attrs) known.push_back(a.name);
      return fail(kl, name + "() has no attribute '" + key + "'" + did_you_mean(key, known));
    }
    auto j = attr_value(*spec, v);
    if (!j.ok()) return fail(kl, name + "(): '" + key + "' " + j.error().message);
    node.attrs[key] = j.value();
  }
  for (auto& a : def->attrs) {
    if (node.attrs.contains(a.name)) continue;
    if (a.default_value.is_null() && a.kind != AttrSpec::Json)
      return fail(loc, name + "() needs the attribute '" + a.name + ":'");
    node.attrs[a.name] = a.default_value;
  }
  auto outs = def->shape(in_types, std::span<const bool>(present.get(), in_types.size()), node.attrs);
  if (!outs.ok()) {
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

// ---- statements ------------------------------------------------------------

void Instantiator::finish_statement(size_t first_value, int result, const std::string& target) {
  auto unique = [&](const std::string& base) {
    std::string n = base;
    for (int k = 2; used_names_.count(n); ++k) n = base + "#" + std::to_string(k);
    used_names_.insert(n);
    return n;
  };
  std::string base = join(prefix_, target);
  // A weight keeps its tensor name; only values this statement computed are
  // named for it; `return` names only what is still unnamed.
  if (result >= int(first_value) && g().values[result].producer >= 0 &&
      (!target.empty() || g().values[result].name.empty()))
    g().values[result].name = unique(base);
  for (size_t id = first_value; id < g().values.size(); ++id)
    if (g().values[id].name.empty()) g().values[id].name = unique(base + "." + provisional_[id]);
}

Status Instantiator::exec(const Body& body, Env& env, Val* returned) {
  for (const auto& s : body) {
    bool did_return = false;
    ARCH_TRY_STATUS(exec_stmt(s, env, returned, did_return));
    if (did_return) return {};
  }
  return {};
}

Status Instantiator::exec_stmt(const Stmt& s, Env& env, Val* returned, bool& did_return) {
  switch (s.kind) {
    case Stmt::Assign: {
      size_t first = g().values.size();
      ARCH_TRY(Val v, eval(*s.value, env));
      if (s.names.size() > 1) {
        // a, b = kv_cache(k, v): one target per output (or list item).
        if (v.kind != Val::List || v.list.size() != s.names.size())
          return fail(s.loc, std::to_string(s.names.size()) + " names on the left, but the right is " + v.describe());
        for (size_t k = 0; k < s.names.size(); ++k) {
          const Val& item = v.list[k];
          finish_statement(first, item.kind == Val::Tensor ? item.tensor : -1, s.names[k]);
          env.vars[s.names[k]] = item;
        }
        return {};
      }
      finish_statement(first, v.kind == Val::Tensor ? v.tensor : -1, s.name);
      env.vars[s.name] = v;
      return {};
    }
    case Stmt::Output: {
      size_t first = g().values.size();
      std::string name = s.name;
      if (s.suffix) {
        ARCH_TRY(Val x, eval(*s.suffix, env));
        if (x.kind == Val::Int) name += std::to_string(x.i);
        else if (x.kind == Val::Str) name += x.s;
        else return fail(s.suffix->loc, "an output name's {...} must be an int or a str, not " + x.describe());
      }
      ARCH_TRY(Val v, eval(*s.value, env));
      int index = -1;
      if (s.index) {
        ARCH_TRY(Val ix, eval(*s.index, env));
        if (ix.kind != Val::Int) return fail(s.index->loc, "an output index must be an int, not " + ix.describe());
        index = int(ix.i);
      }
      ARCH_TRY(int id, as_input(v, s.value->loc, "output " + name, false));
      finish_statement(first, id, index >= 0 ? name + "." + std::to_string(index) : name);
      for (auto& o : g().outputs)
        if (o.name == name && o.index == index) return fail(s.loc, "output " + name + " is set twice");
      g().outputs.push_back({name, index, id});
      return {};
    }
    case Stmt::Call: {
      size_t first = g().values.size();
      ARCH_TRY(Val v, eval(*s.value, env));
      finish_statement(first, v.kind == Val::Tensor ? v.tensor : -1, "");
      return {};
    }
    case Stmt::Return: {
      if (!returned || block_depth_ == 0) return fail(s.loc, "'return' belongs in a block");
      size_t first = g().values.size();
      ARCH_TRY(*returned, eval(*s.value, env));
      finish_statement(first, returned->kind == Val::Tensor ? returned->tensor : -1, "");
      did_return = true;
      return {};
    }
    case Stmt::If: {
      ARCH_TRY(Val c, eval(*s.value, env));
      if (c.kind != Val::Bool)
        return fail(s.value->loc, "an 'if' condition must be true or false (a flag or a config test), not " + c.describe());
      const Body& branch = c.b ? s.body : s.else_body;
      for (const auto& inner : branch) {
        ARCH_TRY_STATUS(exec_stmt(inner, env, returned, did_return));
        if (did_return) return {};
      }
      return {};
    }
    case Stmt::For: {
      ARCH_TRY(Val lo, eval(*s.value, env));
      ARCH_TRY(Val hi, eval(*s.end, env));
      if (lo.kind != Val::Int || hi.kind != Val::Int)
        return fail(s.loc, "a loop range must be ints, not " + lo.describe() + " .. " + hi.describe());
      std::string saved = prefix_, saved_scope = scope_;
      auto restore = [&] { prefix_ = saved; scope_ = saved_scope; };
      for (long long i = lo.i; i < hi.i; ++i) {
        env.vars[s.name] = Val::of_int(i);
        if (!s.scope.empty()) prefix_ = scope_ = join(saved, s.scope + "." + std::to_string(i));
        for (const auto& inner : s.body) {
          Status st = exec_stmt(inner, env, returned, did_return);
          if (!st.ok() || did_return) {
            restore();
            return st;
          }
        }
      }
      restore();
      return {};
    }
  }
  return {};
}

Status Instantiator::run_graph(const GraphDef& gd) {
  g().name = gd.name;
  g().family = t_.family;
  inputs_.globals = &globals_;
  Val seq;
  seq.kind = Val::Seq;
  seq.i = 1;
  inputs_.vars["seq"] = seq;
  Val dyn = seq;  // `_`: a dim known only from a call's inputs (an image's height)
  dyn.i = 3;
  inputs_.vars["_"] = dyn;
  for (const auto& in : gd.inputs) {
    static const std::map<std::string, DType> dtypes = {{"i32", DType::I32}, {"f32", DType::F32}, {"i64", DType::I64}};
    auto dt = dtypes.find(in.dtype);
    if (dt == dtypes.end()) return fail(in.loc, "unknown input type '" + in.dtype + "' (i32, i64 or f32)");
    Shape shape;
    for (auto& d : in.shape) {
      ARCH_TRY(Val x, eval(*d, inputs_));
      if (x.kind == Val::Seq) shape.push_back(x.i == 3 ? Dim::dyn() : Dim::seq());
      else if (x.kind == Val::Int) shape.push_back(Dim::of(x.i));
      else return fail(d->loc, "an input dim must be an int, seq or _, not " + x.describe());
    }
    Value v;
    v.name = in.name;
    v.type = {dt->second, shape};
    v.loc = sloc(in.loc);
    int id = g().add_value(v);
    provisional_.push_back("");
    used_names_.insert(in.name);
    g().inputs.push_back(id);
    inputs_.vars[in.name] = Val::of_tensor(id);
  }
  Env env;
  env.globals = &inputs_;
  ARCH_TRY_STATUS(exec(gd.body, env, nullptr));
  if (g().outputs.empty()) return fail(gd.loc, "graph " + gd.name + " sets no output");
  return {};
}

Result<Instance> Instantiator::run() {
  for (const auto& [file, loc] : t_.imports)
    return fail(loc, "import \"" + file + "\": the import was not resolved (templates with imports are read with parse_template_file)");
  ARCH_TRY_STATUS(resolve_config());
  ARCH_TRY_STATUS(resolve_flags());
  const GraphDef* gd = nullptr;
  for (auto& x : t_.graphs)
    if (x.name == opt_.graph || (opt_.graph.empty() && !gd)) gd = &x;
  if (!gd) {
    std::string names;
    for (auto& x : t_.graphs) names += (names.empty() ? "" : ", ") + x.name;
    return error(t_.path + ": error: the template has no graph '" + opt_.graph + "' (it has: " + (names.empty() ? std::string("none") : names) + ")");
  }
  ARCH_TRY_STATUS(run_graph(*gd));
  return std::move(out_);
}

}  // namespace

Result<Instance> instantiate(const Template& t, const InstantiateOptions& opt, const OpTable& ops) {
  Instantiator in(t, opt, ops);
  return in.run();
}

}  // namespace arch::dsl

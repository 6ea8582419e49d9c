// Evaluating expressions: constants, paths, operators, builtins, block calls.
#include <limits>

#include "dsl/instantiator.h"

#include <cmath>

#include "dsl/names.h"

namespace arch::dsl::detail {

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
  if (!v && !cur_->config_done)
    for (const auto& f : tpl().config)
      if (f.name == head.name) {
        ARCH_TRY_STATUS(resolve_field(f));
        v = env.find(head.name);
      }
  if (!v && e.path.size() > 1)
    if (Space* ns = space_named(head.name)) return eval_in_space(e, env, *ns);
  bool weight_root = false;  // `layernorm`: the first segment of declared weights
  for (const auto& w : tpl().weights) weight_root = weight_root || (!w.pattern.empty() && w.pattern[0].name == head.name);
  if (!v && e.path.size() == 1 && !weight_root) {
    std::vector<std::string> known;
    for (const Env* s = &env; s; s = s->globals)
      for (auto& [n, x] : s->vars) known.push_back(n);
    return fail(e.loc, "undefined name '" + head.name + "'" + did_you_mean(head.name, known));
  }
  Val out;
  if (v && v->kind == Val::Json) return json_member(e, *v, 1);  // rope_scaling.factor
  if (v && v->kind != Val::Path && e.path.size() > 1)
    return fail(e.loc, "'" + head.name + "' is " + v->describe() + ", it has no member '" +
                           (e.path[1].kind == PathSeg::Name ? e.path[1].name : std::string("...")) + "'");
  if (v && e.path.size() == 1) return *v;
  out.kind = Val::Path;
  out.space = v ? v->space : index_of(cur_);
  if (v) out.path = v->path;
  else out.path.push_back(head.name);
  return extend_path(e, env, std::move(out), 1);
}

// `vision.hidden_size`: a field or flag of the namespace; `vision.encoder.
// layers.{i}`: a weight path in its names ({...} evaluated here).
Instantiator::R Instantiator::eval_in_space(const Expr& e, Env& env, Space& ns) {
  const PathSeg& member = e.path[1];
  if (member.kind == PathSeg::Name) {
    const Val* field = ns.globals.find(member.name);
    if (field) {
      if (e.path.size() == 2) return *field;
      if (field->kind != Val::Json) return fail(e.loc, "'" + member.name + "' of " + ns.name + " is " + field->describe() + ", it has no members");
      return json_member(e, *field, 2);
    }
  }
  Val out;
  out.kind = Val::Path;
  out.space = index_of(&ns);
  return extend_path(e, env, std::move(out), 1);
}

// A field of a json config value (rope_scaling.factor): e's segments from
// `from` on, looked up in `out` (null where one is missing).
Instantiator::R Instantiator::json_member(const Expr& e, Val out, size_t from) {
  for (size_t k = from; k < e.path.size(); ++k) {
    if (e.path[k].kind != PathSeg::Name) return fail(e.loc, "a json field is named, not indexed");
    if (out.kind != Val::Json) return Val{};
    auto it = out.json.find(e.path[k].name);
    out = it == out.json.end() ? Val{} : val_from_json(*it);
  }
  return out;
}

// `out`'s path with e's segments from `from` on.
Instantiator::R Instantiator::extend_path(const Expr& e, Env& env, Val out, size_t from) {
  for (size_t k = from; k < e.path.size(); ++k) {
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
  // A config's numbers are the user's: an int that overflows is an error,
  // not a wrapped-around size.
  long long r = 0;
  const bool over = ints && ((op == "+" && __builtin_add_overflow(a.i, b.i, &r)) ||
                             (op == "-" && __builtin_sub_overflow(a.i, b.i, &r)) ||
                             (op == "*" && __builtin_mul_overflow(a.i, b.i, &r)) ||
                             (op != "+" && op != "-" && op != "*" && b.i == -1 &&
                              a.i == std::numeric_limits<long long>::min()));
  if (over) return fail(e.loc, "integer overflow in " + a.describe() + " " + op + " " + b.describe());
  if (op == "+") return ints ? Val::of_int(r) : Val::of_float(x + y);
  if (op == "-") return ints ? Val::of_int(r) : Val::of_float(x - y);
  if (op == "*") return ints ? Val::of_int(r) : Val::of_float(x * y);
  if (op == "/" || op == "//" || op == "%") {
    if (y == 0) return fail(e.loc, "division by zero (" + a.describe() + " " + op + " " + b.describe() + ")");
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
  // `vision.embed_image(x)`: a block of a namespace the current space imports.
  Space* target = cur_;
  std::string name = e.text;
  if (auto dot = name.find('.'); dot != std::string::npos) {
    target = space_named(name.substr(0, dot));
    if (!target) {
      std::vector<std::string> known;
      for (const auto& ns : tpl().spaces) known.push_back(ns.name);
      return fail(e.loc, "'" + name.substr(0, dot) + "' is no namespace this template imports" +
                             did_you_mean(name.substr(0, dot), known));
    }
    name = name.substr(dot + 1);
  }
  Space* runs_in = nullptr;
  if (const BlockDef* b = find_block(target, name, &runs_in)) {
    if (!e.kwargs.empty()) return fail(e.kwarg_locs[0], "a block takes positional arguments only");
    return call_block(e, *b, args, runs_in);
  }
  if (target != cur_) return fail(e.loc, "namespace " + target->name + " has no block '" + name + "'");
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
  for (auto& b : tpl().blocks) known.push_back(b.name);
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
    return Val::of_bool(tensor_exists(*spaces_.at(size_t(a[0].space)), a[0].path_str()));
  }
  if (f == "len") {
    ARCH_TRY_STATUS(want(1));
    if (a[0].kind == Val::List) return Val::of_int((long long)a[0].list.size());
    if (a[0].kind == Val::Str) return Val::of_int((long long)a[0].s.size());
    if (a[0].kind == Val::Null) return Val::of_int(0);
    if (a[0].kind == Val::Json) return Val::of_int((long long)a[0].json.size());
    return fail(e.loc, "len() of " + a[0].describe());
  }
  if (f == "sqrt" || f == "int" || f == "float" || f == "log") {
    ARCH_TRY_STATUS(want(1));
    // sqrt of a tensor is the sqrt op; of a number, this builtin.
    if (f == "sqrt" && (a[0].kind == Val::Tensor || a[0].kind == Val::Path))
      return call_op("sqrt", e.loc, {a[0]}, {}, {});
    if (!a[0].is_number()) return fail(e.loc, f + "() needs a number, not " + a[0].describe());
    if (f == "sqrt") return Val::of_float(std::sqrt(a[0].num()));
    if (f == "log") {  // the natural log, as Python's math.log (yarn's mscale)
      if (!(a[0].num() > 0)) return fail(e.loc, "log() needs a positive number, not " + a[0].describe());
      return Val::of_float(std::log(a[0].num()));
    }
    if (f == "int") return Val::of_int((long long)a[0].num());
    return Val::of_float(a[0].num());
  }
  if (f == "min" || f == "max") {
    ARCH_TRY_STATUS(want(2));
    if (!a[0].is_number() || !a[1].is_number()) return fail(e.loc, f + "() needs numbers");
    bool first = f == "min" ? a[0].num() <= a[1].num() : a[0].num() >= a[1].num();
    return first ? a[0] : a[1];
  }
  if (f == "is_list") {
    // is_list(x): a config value given as a list (diffusers' per-level
    // attention_head_dim) rather than one number for all
    ARCH_TRY_STATUS(want(1));
    return Val::of_bool(a[0].kind == Val::List);
  }
  if (f == "contains") {
    // contains(list, x): is x an item of the list (mlp_only_layers, ...);
    // contains(str, s): is s part of the string (DeBERTa's "p2c|c2p")
    ARCH_TRY_STATUS(want(2));
    if (a[0].kind == Val::Null) return Val::of_bool(false);
    if (a[0].kind == Val::Str) {
      if (a[1].kind != Val::Str) return fail(e.loc, "contains() looks for a str in a str, not " + a[1].describe());
      return Val::of_bool(a[0].s.find(a[1].s) != std::string::npos);
    }
    if (a[0].kind != Val::List) return fail(e.loc, "contains() looks in a list or a str, not " + a[0].describe());
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

const BlockDef* Instantiator::find_block(Space* s, const std::string& name, Space** runs_in) const {
  if (s->parent >= 0) {
    Space* p = spaces_[size_t(s->parent)].get();
    const std::string own = s->name.substr(p->name.empty() ? 0 : p->name.size() + 1);
    for (const auto& b : p->t->blocks)
      if (b.name == own + "." + name) return *runs_in = p, &b;
  }
  for (const auto& b : s->t->blocks)
    if (b.name == name) return *runs_in = s, &b;
  return nullptr;
}

Instantiator::R Instantiator::call_block(const Expr& e, const BlockDef& b, std::vector<Val>& args, Space* space) {
  if (args.size() != b.params.size())
    return fail(e.loc, "block '" + b.name + "' takes " + std::to_string(b.params.size()) +
                           " arguments, got " + std::to_string(args.size()));
  if (++block_depth_ > 32) return fail(e.loc, "blocks nested too deeply (a block calls itself?)");
  // A block sees its parameters, the graph's inputs (and seq), the config
  // and the flags; not the caller's locals.
  Space* saved_space = cur_;
  cur_ = space;
  Env env;
  env.globals = &cur_->inputs;
  for (size_t k = 0; k < args.size(); ++k) env.vars[b.params[k]] = args[k];
  // Values made in a block are named scope.block.name (layers.3.mlp.gate),
  // however deeply blocks call blocks.
  std::string saved = prefix_;
  prefix_ = join(scope_, b.name);
  Val ret;
  calls_.emplace_back(&b, e.loc);
  Status st = exec(b.body, env, &ret);
  calls_.pop_back();
  prefix_ = saved;
  cur_ = saved_space;
  --block_depth_;
  if (!st.ok()) return st.error();
  return ret;
}

}  // namespace arch::dsl::detail

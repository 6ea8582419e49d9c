#include "dsl/instantiate.h"

#include "dsl/instantiator.h"

#include <algorithm>
#include <limits>

#include "engine/core/limits.h"

namespace arch::dsl {

namespace detail {

// `base` if no value has it yet, else base#2, base#3, ...: the first free
// one. A loop without a scope names `a` again every iteration; trying #2,
// #3, ... afresh each time made n iterations cost n^2. Names are never
// given back, so every number below the one kept per base is taken and the
// search resumes there.
std::string Instantiator::unique_name(const std::string& base) {
  if (used_names_.insert(base).second) return base;
  int& k = next_suffix_[base];
  k = std::max(k, 2);
  std::string n;
  do n = base + "#" + std::to_string(k++);
  while (!used_names_.insert(n).second);
  return n;
}

void Instantiator::finish_statement(size_t first_value, int result, const std::string& target) {
  std::string base = join(prefix_, target);
  // A weight keeps its tensor name; only values this statement computed are
  // named for it; `return` names only what is still unnamed.
  if (result >= int(first_value) && g().values[result].producer >= 0 &&
      (!target.empty() || g().values[result].name.empty()))
    g().values[result].name = unique_name(base);
  for (size_t id = first_value; id < g().values.size(); ++id)
    if (g().values[id].name.empty()) g().values[id].name = unique_name(base + "." + provisional_[id]);
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
      // Looked up, not searched: a loop may set thousands (hidden_states[i]).
      if (!outputs_set_.emplace(name, index).second) return fail(s.loc, "output " + name + " is set twice");
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
      // A count from config.json (num_hidden_layers: -2, or 1e9) is checked
      // here, before the loop unrolls anything.
      if (hi.i < lo.i)
        return fail(s.end->loc, "the loop range " + std::to_string(lo.i) + " .. " + std::to_string(hi.i) +
                                    " runs backwards (a count in config.json is negative?)");
      long long count = 0;
      if (__builtin_sub_overflow(hi.i, lo.i, &count) || __builtin_add_overflow(loop_iterations_, count, &loop_iterations_))
        loop_iterations_ = std::numeric_limits<long long>::max();
      if (auto st = check_limit("loop_iterations", loop_iterations_, "", "the template's loop iterations"); !st)
        return fail(s.end->loc, st.error().message);
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
        if (auto st = check_limit("graph_nodes", int64_t(g().nodes.size()), "", "the graph's nodes"); !st) {
          restore();
          return fail(s.loc, st.error().message);
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
  g().family = root_.family;
  Env& inputs_ = cur_->inputs;
  inputs_.globals = &cur_->globals;
  Val seq;
  seq.kind = Val::Seq;
  seq.i = 1;
  inputs_.vars["seq"] = seq;
  Val dyn = seq;  // `_`: a dim known only from a call's inputs (an image's height)
  dyn.i = kDynSym;
  inputs_.vars["_"] = dyn;
  // A bare name in an input's shape that the config does not define is a
  // run-time dim of this graph (`frames`, `src`), bound at each call to the
  // size the input brings; the body sees it as it sees `seq`.
  for (const auto& in : gd.inputs)
    for (const auto& name : bare_dim_names(in))
      if (!inputs_.find(name)) {
        Val named = seq;
        named.i = dim_symbol(name);
        inputs_.vars[name] = named;
      }
  for (const auto& in : gd.inputs) {
    static const std::map<std::string, DType> dtypes = {{"i32", DType::I32}, {"f32", DType::F32}, {"i64", DType::I64}};
    auto dt = dtypes.find(in.dtype);
    if (dt == dtypes.end()) return fail(in.loc, "unknown input type '" + in.dtype + "' (i32, i64 or f32)");
    Shape shape;
    for (auto& d : in.shape) {
      ARCH_TRY(Val x, eval(*d, inputs_));
      if (x.kind == Val::Seq) shape.push_back(Dim::named(int(x.i)));
      else if (x.kind == Val::Int) shape.push_back(Dim::of(x.i));
      else return fail(d->loc, "an input dim must be an int, a run-time dim (seq, _, or a name of its own) or a config field, not " + x.describe());
    }
    Value v;
    v.name = in.name;
    v.type = {dt->second, shape};
    v.loc = sloc(in.loc);
    int id = g().add_value(v);
    provisional_.push_back("");
    used_names_.insert(in.name);
    g().inputs.push_back(id);
    if (in.held) g().held_inputs.push_back(id);
    if (in.default_value) {
      ARCH_TRY(Val d, eval(*in.default_value, cur_->globals));
      Graph::InputDefault def{id, d.kind == Val::Null, d.is_number() ? d.num() : 0.0};
      if (!def.absent && (!d.is_number() || !is_concrete(shape)))
        return fail(in.default_value->loc, "input " + in.name + ": a default is a number (for a concrete shape, " +
                                               "filled with it) or null (the input may be absent), not " + d.describe());
      g().input_defaults.push_back(def);
    }
    inputs_.vars[in.name] = Val::of_tensor(id);
  }
  // An imported space's blocks see the graph's inputs over its own names.
  for (auto& sp : spaces_) {
    if (sp.get() == cur_) continue;
    sp->inputs.vars = inputs_.vars;
    sp->inputs.globals = &sp->globals;
  }
  Env env;
  env.globals = &inputs_;
  ARCH_TRY_STATUS(exec(gd.body, env, nullptr));
  if (g().outputs.empty()) return fail(gd.loc, "graph " + gd.name + " sets no output");
  // An input that may be absent goes only where an op takes an absent one.
  for (const auto& d : g().input_defaults) {
    if (!d.absent) continue;
    for (const Node& n : g().nodes)
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const OpDef* def = ops_.find(n.op);
        if (n.inputs[i] != d.value || !def) continue;
        const std::string& slot = def->inputs[std::min(i, def->inputs.size() - 1)];
        if (slot.ends_with('?')) continue;
        const std::string& name = g().values[size_t(d.value)].name;
        for (const auto& in : gd.inputs)
          if (in.name == name)
            return fail(in.loc, "input " + name + " may be absent (= null), but " + n.op + " (line " +
                                    std::to_string(n.loc.line) + ") requires its '" + slot + "'");
      }
  }
  return {};
}

Result<Instance> Instantiator::run() {
  for (const auto& [file, loc] : root_.imports)
    return fail(loc, "import \"" + file + "\": the import was not resolved (templates with imports are read with parse_template_file)");
  for (const auto& ns : root_.spaces)
    if (!ns.t) return fail(ns.loc, "import \"" + ns.file + "\": the import was not resolved (templates with imports are read with parse_template_file)");
  auto root = std::make_unique<Space>();
  root->t = &root_;
  root->config = opt_.config;
  for (auto& [k, v] : opt_.flag_overrides)
    if (k.find('.') == std::string::npos) root->flag_overrides[k] = v;
  spaces_.push_back(std::move(root));
  cur_ = spaces_[0].get();
  // The imported spaces first: the template's own fields may be theirs
  // (`vocab_size: int = text.vocab_size`).
  ARCH_TRY_STATUS(make_spaces(0));
  for (auto& [k, v] : opt_.flag_overrides) {  // `--flag text.tied=false`: a namespace's flag
    const auto dot = k.rfind('.');
    if (dot == std::string::npos) continue;
    bool known = false;
    for (const auto& sp : spaces_) known = known || sp->name == k.substr(0, dot);
    if (!known) return error(root_.path + ": error: --flag " + k + ": the template imports no namespace '" + k.substr(0, dot) + "'");
  }
  ARCH_TRY_STATUS(resolve_config());
  ARCH_TRY_STATUS(resolve_flags());
  const GraphDef* gd = nullptr;
  for (auto& x : root_.graphs)
    if (x.name == opt_.graph || (opt_.graph.empty() && !gd)) gd = &x;
  if (!gd) {
    std::string names;
    for (auto& x : root_.graphs) names += (names.empty() ? "" : ", ") + x.name;
    return error(root_.path + ": error: the template has no graph '" + opt_.graph + "' (it has: " + (names.empty() ? std::string("none") : names) + ")");
  }
  ARCH_TRY_STATUS(run_graph(*gd));
  return std::move(out_);
}

}  // namespace detail

Result<Instance> instantiate(const Template& t, const InstantiateOptions& opt, const OpTable& ops) {
  detail::Instantiator in(t, opt, ops);
  return in.run();
}

Result<std::map<std::string, bool>> parse_flag_overrides(const std::vector<std::string>& given) {
  std::map<std::string, bool> out;
  for (const auto& f : given) {
    auto eq = f.find('=');
    std::string v = eq == std::string::npos ? "true" : f.substr(eq + 1);
    if (v != "true" && v != "false") return error("--flag " + f + ": the value must be true or false");
    out[f.substr(0, eq)] = v == "true";
  }
  return out;
}

}  // namespace arch::dsl

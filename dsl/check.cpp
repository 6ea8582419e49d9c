#include "dsl/check.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "dsl/diagnostic.h"
#include "dsl/names.h"

namespace arch::dsl {

namespace {

class Checker {
 public:
  Checker(const Template& t, const OpTable& ops) : t_(t), ops_(ops) {}

  std::vector<Error> run();

 private:
  struct Scope {
    std::set<std::string> names;
    std::map<std::string, std::vector<PathSeg>> paths;  // locals bound to weight paths
    bool in_block = false;
  };

  // Past this many faults the rest are counted, not listed, and no "did
  // you mean" is worked out for them: a file of thousands reads no better
  // for each, and each suggestion weighs every name in scope.
  static constexpr size_t kMostErrors = 50;
  bool full() const { return errors_.size() >= kMostErrors; }
  void report(Loc loc, const std::string& msg) {
    if (full()) {
      ++unlisted_;
      return;
    }
    errors_.push_back(diag(t_, loc, msg));
  }
  void literal_type(const ConfigField& f);
  void expr(const Expr& e, const Scope& s);
  void path(const Expr& e, const Scope& s);
  void call(const Expr& e, const Scope& s);
  void space_call(const Expr& e, const Scope& s, size_t dot);
  void body(const Body& b, const Scope& s);
  void collect(const Body& b, Scope& s);
  // A graph's inputs, and the run-time dims their shapes name (a bare name
  // that is no config field or flag: `frames`, `src`).
  static void add_inputs(const GraphDef& g, Scope& s) {
    for (const auto& in : g.inputs) {
      s.names.insert(in.name);
      for (const auto& name : bare_dim_names(in)) s.names.insert(name);
    }
  }
  bool weight_matches(const std::vector<PathSeg>& p, bool prefix = false, int depth = 0) const;
  std::string suggest(const std::string& name, const Scope& s) const;

  const Template& t_;
  const OpTable& ops_;
  std::set<std::string> globals_;
  std::vector<Error> errors_;
  size_t unlisted_ = 0;     // faults past kMostErrors
  bool prefix_ok_ = false;  // `L = path`, a block's argument: a prefix of a weight name will do
};

std::string Checker::suggest(const std::string& name, const Scope& s) const {
  Suggestion sg(name);
  for (const auto& k : globals_) sg.consider(k);
  for (const auto& k : s.names) sg.consider(k);
  return sg.text();
}

// Could a body path (with {expr} segments unknown until instantiation) name a
// declared weight, or, with `prefix`, the start of one (L = model.layers.{i})?
// A path under an alias's pattern is also looked up as its target.
bool Checker::weight_matches(const std::vector<PathSeg>& p, bool prefix, int depth) const {
  auto seg_ok = [](const PathSeg& a, const PathSeg& b) {  // a: declared, b: used
    if (a.kind == PathSeg::Any) return true;
    if (b.kind == PathSeg::Interp) return a.kind != PathSeg::Name;
    if (a.kind == PathSeg::Interp) return b.kind == PathSeg::Index;
    if (a.kind != b.kind) return false;
    return a.kind == PathSeg::Name ? a.name == b.name : a.index == b.index;
  };
  for (const auto& w : t_.weights) {
    if (w.alias || (prefix ? w.pattern.size() < p.size() : w.pattern.size() != p.size())) continue;
    bool ok = true;
    for (size_t k = 0; k < p.size() && ok; ++k) ok = seg_ok(w.pattern[k], p[k]);
    if (ok) return true;
  }
  if (depth >= 16) return false;
  for (const auto& w : t_.weights) {
    if (!w.alias || w.pattern.size() > p.size()) continue;
    bool ok = true;
    for (size_t k = 0; k < w.pattern.size() && ok; ++k) ok = seg_ok(w.pattern[k], p[k]);
    if (!ok) continue;
    std::vector<PathSeg> mapped = w.target;
    mapped.insert(mapped.end(), p.begin() + (long)w.pattern.size(), p.end());
    if (weight_matches(mapped, prefix, depth + 1)) return true;
  }
  return false;
}

void Checker::path(const Expr& e, const Scope& s) {
  const std::string& head = e.path[0].name;
  for (size_t k = 1; k < e.path.size(); ++k)
    if (e.path[k].kind == PathSeg::Interp && e.path[k].expr) expr(*e.path[k].expr, s);
  bool local = s.names.count(head) > 0;
  bool global = globals_.count(head) > 0;
  if (e.path.size() == 1) {
    // A lone weight root (`layernorm`) is a prefix, fine where one is; a
    // one-segment weight (`final_logits_bias`) is a tensor anywhere.
    if (!local && !global && !(prefix_ok_ && weight_matches(e.path, true)) && !weight_matches(e.path, false))
      report(e.loc, "undefined name '" + head + "'" + (full() ? "" : suggest(head, s)));
    return;
  }
  // `vision.hidden_size`, `vision.encoder.layers.{i}`: the namespace's
  // names, checked when its own file is.
  if (!local && !global && find_space(t_, head)) return;
  std::vector<PathSeg> full;
  auto bound = s.paths.find(head);
  if (bound != s.paths.end()) {
    full = bound->second;
    full.insert(full.end(), e.path.begin() + 1, e.path.end());
  } else if (local || global) {
    return;  // a member of a json config value, or of a block parameter: known at instantiation
  } else {
    full = e.path;
  }
  if (!weight_matches(full, prefix_ok_))
    report(e.loc, "weight " + path_str(full) + " is not declared in the template's weights { }");
}

void Checker::call(const Expr& e, const Scope& s) {
  if (auto dot = e.text.find('.'); dot != std::string::npos) return space_call(e, s, dot);
  bool block = false;
  for (const auto& b : t_.blocks) block |= b.name == e.text;
  // exists(path) asks about any tensor name: only the names in its {...} are checked.
  if (e.text == "exists" && !block) {
    for (auto& a : e.args) {
      if (a->kind != Expr::Path || a->path.size() == 1) expr(*a, s);
      else
        for (auto& seg : a->path)
          if (seg.kind == PathSeg::Interp && seg.expr) expr(*seg.expr, s);
    }
    return;
  }
  // A block may take a weight prefix (decoder_layer(h, model.layers.{i}, i)).
  bool saved = prefix_ok_;
  prefix_ok_ = block;
  for (auto& a : e.args) expr(*a, s);
  prefix_ok_ = saved;
  for (auto& [k, v] : e.kwargs) expr(*v, s);
  for (const auto& b : t_.blocks)
    if (b.name == e.text) {
      if (e.args.size() != b.params.size())
        report(e.loc, "block '" + b.name + "' takes " + std::to_string(b.params.size()) +
                          " arguments, got " + std::to_string(e.args.size()));
      return;
    }
  if (is_builtin(e.text)) return;
  const OpDef* def = ops_.find(e.text);
  if (!def) {
    if (full()) return report(e.loc, "");
    std::vector<std::string> names = ops_.names();
    for (auto& b : t_.blocks) names.push_back(b.name);
    for (auto& b : builtin_names()) names.push_back(b);
    report(e.loc, "unknown function '" + e.text + "'" + did_you_mean(e.text, names));
    return;
  }
  bool variadic = !def->inputs.empty() && def->inputs.back().back() == '*';
  size_t required = 0;
  for (auto& in : def->inputs) required += in.back() != '?';
  if (e.args.size() < required || (!variadic && e.args.size() > def->inputs.size()))
    report(e.loc, e.text + "() takes " + std::to_string(required) +
                      (variadic ? " or more" : required == def->inputs.size() ? "" : " to " + std::to_string(def->inputs.size())) +
                      " tensor argument" + (def->inputs.size() == 1 && !variadic ? "" : "s") + ", got " +
                      std::to_string(e.args.size()));
  for (size_t k = 0; k < e.kwargs.size(); ++k) {
    bool found = false;
    for (auto& a : def->attrs) found |= !a.planner_only && a.name == e.kwargs[k].first;
    if (found) continue;
    std::vector<std::string> names;
    for (auto& a : def->attrs)
      if (!a.planner_only) names.push_back(a.name);
    report(e.kwarg_locs[k], e.text + "() has no attribute '" + e.kwargs[k].first + "'" +
                                  (full() ? "" : did_you_mean(e.kwargs[k].first, names)));
  }
}

// `vision.embed_image(x)`: a block of an imported namespace (or the
// importing file's redefinition of one).
void Checker::space_call(const Expr& e, const Scope& s, size_t dot) {
  const std::string ns_name = e.text.substr(0, dot), name = e.text.substr(dot + 1);
  bool saved = prefix_ok_;
  prefix_ok_ = true;
  for (auto& a : e.args) expr(*a, s);
  prefix_ok_ = saved;
  const Namespace* ns = find_space(t_, ns_name);
  if (!ns || !ns->t) return report(e.loc, "'" + ns_name + "' is no namespace this template imports");
  if (!e.kwargs.empty()) return report(e.kwarg_locs[0], "a block takes positional arguments only");
  const std::vector<BlockDef>* own = &t_.blocks;
  for (const std::vector<BlockDef>* blocks : {own, static_cast<const std::vector<BlockDef>*>(&ns->t->blocks)})
    for (const auto& b : *blocks)
      if (b.name == (blocks == own ? e.text : name)) {
        if (e.args.size() != b.params.size())
          report(e.loc, "block '" + e.text + "' takes " + std::to_string(b.params.size()) + " arguments, got " +
                            std::to_string(e.args.size()));
        return;
      }
  report(e.loc, "namespace " + ns_name + " has no block '" + name + "'");
}

void Checker::expr(const Expr& e, const Scope& s) {
  switch (e.kind) {
    case Expr::Path: path(e, s); break;
    case Expr::Call: call(e, s); break;
    default:
      for (auto& a : e.args) expr(*a, s);
  }
}

// Names assigned anywhere in a body are known everywhere in it (the check is
// flow-insensitive; instantiation catches use-before-assignment).
void Checker::collect(const Body& b, Scope& s) {
  for (const auto& st : b) {
    if (st.kind == Stmt::Assign) {
      // A local bound to a weight path (L = model.layers.{i}), or to a path
      // through another such local (M = L.mlp), expanded to the full path.
      const Expr& v = *st.value;
      if (v.kind == Expr::Path && v.path.size() > 1) {
        const std::string& head = v.path[0].name;
        auto bound = s.paths.find(head);
        if (bound != s.paths.end()) {
          std::vector<PathSeg> full = bound->second;
          full.insert(full.end(), v.path.begin() + 1, v.path.end());
          s.paths[st.name] = std::move(full);
        } else if (!globals_.count(head) && !s.names.count(head)) {
          s.paths[st.name] = v.path;
        }
      }
      s.names.insert(st.names.begin(), st.names.end());
    }
    if (st.kind == Stmt::For) s.names.insert(st.name);
    collect(st.body, s);
    collect(st.else_body, s);
  }
}

void Checker::body(const Body& b, const Scope& s) {
  for (const auto& st : b) {
    prefix_ok_ = st.kind == Stmt::Assign && (st.value->kind == Expr::Path || st.value->kind == Expr::Cond);
    if (st.value) expr(*st.value, s);
    prefix_ok_ = false;
    if (st.end) expr(*st.end, s);
    if (st.index) expr(*st.index, s);
    if (st.suffix) expr(*st.suffix, s);
    if (st.kind == Stmt::Return && !s.in_block) report(st.loc, "'return' belongs in a block");
    body(st.body, s);
    body(st.else_body, s);
  }
}

// A literal default must fit its field's declared type (computed defaults
// are checked when a config instantiates the template).
void Checker::literal_type(const ConfigField& f) {
  const Expr& d = *f.default_value;
  auto fits = [&](const Expr& e, const std::string& elem) {
    switch (e.kind) {
      case Expr::Number: return elem == "float" || elem == "json" || (elem == "int" && e.is_int);
      case Expr::String: return elem == "str" || elem == "json";
      case Expr::Bool: return elem == "bool" || elem == "json";
      case Expr::Null: return true;
      default: return true;
    }
  };
  bool ok = true;
  if (d.kind == Expr::List) {
    ok = f.type.list || f.type.elem == "json";
    if (f.type.list)
      for (auto& item : d.args) ok = ok && fits(*item, f.type.elem);
  } else if (f.type.list) {
    ok = d.kind != Expr::Number && d.kind != Expr::String && d.kind != Expr::Bool;
  } else {
    ok = fits(d, f.type.elem);
  }
  if (!ok) report(d.loc, "the default of '" + f.name + "' does not fit its type " + f.type.str());
}

std::vector<Error> Checker::run() {
  if (t_.family.empty()) report({1, 1}, "the template names no family");
  for (const auto& [file, loc] : t_.imports)
    report(loc, "import \"" + file + "\": the import was not resolved (templates with imports are read with parse_template_file)");
  // Global names: config fields and flags in order (each may use the earlier ones).
  Scope none;
  std::set<std::string> seen;
  for (const auto& f : t_.config) globals_.insert(f.name);  // defaults may name any field
  for (const auto& f : t_.config) {
    if (!seen.insert(f.name).second) report(f.loc, "config field '" + f.name + "' is declared twice");
    if (f.default_value) {
      expr(*f.default_value, none);
      literal_type(f);
    }
    globals_.insert(f.name);
  }
  for (const auto& fl : t_.flags) {
    if (!seen.insert(fl.name).second) report(fl.loc, "'" + fl.name + "' is declared twice");
    // exists(path) takes any path: only check the other names.
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (e.kind == Expr::Call && e.text == "exists") return;
      if (e.kind == Expr::Call) { call(e, none); return; }
      if (e.kind == Expr::Path) { path(e, none); return; }
      for (auto& a : e.args) walk(*a);
    };
    walk(*fl.value);
    globals_.insert(fl.name);
  }
  for (const auto& w : t_.weights) {
    Scope ws;
    for (auto& seg : w.pattern)
      if (seg.kind == PathSeg::Interp) ws.names.insert(seg.name);
    for (auto& d : w.shape) expr(*d, ws);
    if (w.condition) expr(*w.condition, ws);
    for (auto* segs : {&w.pattern, &w.target})
      if (w.alias && std::any_of(segs->begin(), segs->end(), [](const PathSeg& g) { return g.kind == PathSeg::Any; }))
        report(w.loc, "an alias names its weights without '*' (use {i} for an index)");
    // An alias's target, or the name it stands for, must be (the start of) a
    // declared weight: one of them gives the shape.
    if (w.alias && !weight_matches(w.target, true) && !weight_matches(w.pattern, true))
      report(w.loc, "alias target " + path_str(w.target) + " is not a declared weight, nor is " +
                        path_str(w.pattern));
  }
  for (const auto& b : t_.blocks) {
    // `block vision.embed_image(...)` redefines a block of a namespace.
    if (auto dot = b.name.find('.'); dot != std::string::npos) {
      const Namespace* ns = find_space(t_, b.name.substr(0, dot));
      bool found = false;
      if (ns && ns->t)
        for (const auto& inner : ns->t->blocks) found |= inner.name == b.name.substr(dot + 1);
      if (!found) report(b.loc, "block " + b.name + " redefines no block of an imported namespace");
    }
    Scope s;
    s.in_block = true;
    s.names.insert({"seq", "_"});
    for (const auto& g : t_.graphs)  // blocks see the graphs' inputs and run-time dims
      add_inputs(g, s);
    s.names.insert(b.params.begin(), b.params.end());
    collect(b.body, s);
    body(b.body, s);
  }
  if (t_.graphs.empty()) report(t_.family_loc, "the template defines no graph");
  for (const auto& g : t_.graphs) {
    for (const auto& in : g.inputs)  // defaults read the config alone
      if (in.default_value) expr(*in.default_value, Scope{});
    Scope s;
    s.names.insert({"seq", "_"});
    add_inputs(g, s);
    collect(g.body, s);
    body(g.body, s);
  }
  if (unlisted_ > 0)
    errors_.push_back(error(t_.path + ": " + std::to_string(unlisted_) + " more error" + (unlisted_ == 1 ? "" : "s") +
                            " after these " + std::to_string(kMostErrors) + " not listed"));
  return std::move(errors_);
}

}  // namespace

std::vector<Error> check_template(const Template& t, const OpTable& ops) {
  return Checker(t, ops).run();
}

}  // namespace arch::dsl

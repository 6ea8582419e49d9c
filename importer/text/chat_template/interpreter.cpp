#include "importer/text/chat_template/interpreter.h"

#include <memory>
#include <unordered_map>

#include "importer/text/chat_template/access.h"
#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/builtins.h"
#include "importer/text/chat_template/filters.h"
#include "importer/text/chat_template/operators.h"
#include "importer/text/chat_template/predicates.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};
using ScopePtr = std::shared_ptr<Scope>;

ScopePtr child(const ScopePtr& parent) {
  auto s = std::make_shared<Scope>();
  s->parent = parent;
  return s;
}

// The `loop` variable of one iteration.
struct LoopState {
  Value list;  // the items, as a list value: a list iterated is shared, not copied
  std::optional<Value> last_changed;
  const std::vector<Value>& items() const { return list.list().items; }
};

class LoopContext : public Object {
 public:
  LoopContext(std::shared_ptr<LoopState> state, size_t index) : state_(std::move(state)), i_(index) {}
  std::string type_name() const override { return "LoopContext"; }
  bool append_repr(std::string& out, int, size_t cap) const override {
    out += "<LoopContext " + std::to_string(i_ + 1) + "/" + std::to_string(n()) + ">";
    return out.size() <= cap;
  }
  std::optional<Value> get_attr(const std::string& name) const override {
    int64_t i = static_cast<int64_t>(i_), len = static_cast<int64_t>(n());
    if (name == "index") return Value::integer(i + 1);
    if (name == "index0") return Value::integer(i);
    if (name == "revindex") return Value::integer(len - i);
    if (name == "revindex0") return Value::integer(len - i - 1);
    if (name == "first") return Value::boolean(i == 0);
    if (name == "last") return Value::boolean(i + 1 == len);
    if (name == "length") return Value::integer(len);
    if (name == "depth") return Value::integer(1);
    if (name == "depth0") return Value::integer(0);
    if (name == "previtem")
      return i > 0 ? state_->items()[i_ - 1] : Value::undefined("there is no previous item");
    if (name == "nextitem")
      return i + 1 < len ? state_->items()[i_ + 1] : Value::undefined("there is no next item");
    if (name == "cycle") {
      size_t index = i_;
      return Value::function("loop.cycle", [index](const CallArgs& a) -> Result<Value> {
        if (!a.keyword.empty()) return error("loop.cycle() takes no keyword arguments");
        if (a.positional.empty()) return error("no items for cycling given");
        return a.positional[index % a.positional.size()];
      });
    }
    if (name == "changed") {
      auto state = state_;
      return Value::function("loop.changed", [state](const CallArgs& a) -> Result<Value> {
        Value v = Value::list(a.positional, true);
        if (!state->last_changed || !equals(*state->last_changed, v)) {
          state->last_changed = v;
          return Value::boolean(true);
        }
        return Value::boolean(false);
      });
    }
    return std::nullopt;
  }

 private:
  size_t n() const { return state_->items().size(); }
  std::shared_ptr<LoopState> state_;
  size_t i_;
};

// Whether an expression or body reads `name` (for a macro's varargs/kwargs).
bool mentions(const Expr* e, const std::string& name);
bool mentions(const Body& body, const std::string& name) {
  for (const auto& s : body) {
    for (const auto& e : s->exprs)
      if (mentions(e.get(), name)) return true;
    for (const auto& [c, b] : s->branches)
      if (mentions(c.get(), name) || mentions(b, name)) return true;
    if (mentions(s->expr.get(), name) || mentions(s->cond.get(), name)) return true;
    if (mentions(s->body, name) || mentions(s->else_body, name)) return true;
    for (const auto& f : s->filters)
      if (mentions(f.get(), name)) return true;
    for (const auto& [t, e] : s->assigns)
      if (mentions(e.get(), name)) return true;
    for (const auto& [p, d] : s->params)
      if (mentions(d.get(), name)) return true;
  }
  return false;
}
bool mentions(const Expr* e, const std::string& name) {
  if (!e) return false;
  if (e->kind == Expr::Kind::Name && e->name == name) return true;
  for (const auto& a : e->args)
    if (mentions(a.get(), name)) return true;
  for (const auto& [k, a] : e->kwargs)
    if (mentions(a.get(), name)) return true;
  return mentions(e->dyn_args.get(), name) || mentions(e->dyn_kwargs.get(), name);
}

bool is_located(const Error& e) { return e.message.rfind("chat_template:", 0) == 0; }

// An error from evaluating at `pos`: located there unless it already is.
Error at(Pos pos, const Error& e, const std::string& prefix = "") {
  if (is_located(e)) return e;
  std::string m = e.message;
  if (!prefix.empty() && m.rfind(prefix, 0) != 0) m = prefix + ": " + m;
  return error(located(pos, m));
}

enum class Flow { Normal, Break, Continue };

// Appends piece to the text being rendered, within chat_text_bytes.
Status append_text(std::string& out, const std::string& piece, Pos pos) {
  auto room = check_text_sum(out.size(), piece.size(), "the size in bytes of the rendered text");
  if (!room.ok()) return at(pos, room.error());
  out += piece;
  return {};
}

class Interpreter {
 public:
  explicit Interpreter(const RenderOptions& options, const RenderBudget& budget)
      : options_(options), max_nesting_(budget.depth) {}

  Result<std::string> run(const Body& body, const Value& context) {
    auto out = render(body, context);
    unlink();
    return out;
  }

 private:
  Result<std::string> render(const Body& body, const Value& context) {
    auto globals = std::make_shared<Scope>();
    for (auto& [k, v] : global_names(options_.now, &namespaces_)) globals->vars[k] = v;
    auto ctx = child(globals);
    for (const auto& [k, v] : context.dict().items)
      if (k.is_string()) ctx->vars[k.as_string()] = v;
    std::string out;
    ARCH_TRY(Flow f, exec_body(body, child(ctx), out));
    (void)f;
    return out;
  }

  // A macro holds the scope it was defined in, which holds the macro; a
  // namespace may hold itself. Such cycles would keep every value of the
  // render alive after it (a megabyte string a request, in a server): they
  // are broken here, when no macro can be called any more.
  void unlink() {
    for (const auto& w : macro_scopes_)
      if (auto s = w.lock()) s->vars.clear();
    for (const auto& w : namespaces_)
      if (auto ns = w.lock()) ns->clear();
  }

  // ---- statements ----

  Result<Flow> exec_body(const Body& body, const ScopePtr& scope, std::string& out) {
    for (const auto& s : body) {
      ARCH_TRY(Flow f, exec(*s, scope, out));
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  Result<Flow> exec(const Stmt& s, const ScopePtr& scope, std::string& out) {
    Nesting guard(nesting_);
    if (nesting_ > max_nesting_) return too_deep(s.pos);
    switch (s.kind) {
      case Stmt::Kind::Text:
        ARCH_TRY_STATUS(append_text(out, s.text, s.pos));
        break;
      case Stmt::Kind::Print:
        for (const auto& e : s.exprs) {
          ARCH_TRY(Value v, eval(*e, scope));
          ARCH_TRY_STATUS(print(out, v, e->pos));
        }
        break;
      case Stmt::Kind::If:
        for (const auto& [cond, body] : s.branches) {
          ARCH_TRY(Value c, eval(*cond, scope));
          if (truthy(c)) return exec_body(body, scope, out);
        }
        return exec_body(s.else_body, scope, out);
      case Stmt::Kind::For: return exec_for(s, scope, out);
      case Stmt::Kind::Set: {
        ARCH_TRY(Value v, eval(*s.expr, scope));
        ARCH_TRY_STATUS(assign(s.target, v, scope));
        break;
      }
      case Stmt::Kind::SetBlock: {
        std::string text;
        ARCH_TRY(Flow f, exec_body(s.body, child(scope), text));
        (void)f;
        ARCH_TRY(Value v, apply_filters(s.filters, Value::string(std::move(text)), scope));
        ARCH_TRY_STATUS(assign(s.target, v, scope));
        break;
      }
      case Stmt::Kind::FilterBlock: {
        std::string text;
        ARCH_TRY(Flow f, exec_body(s.body, child(scope), text));
        (void)f;
        ARCH_TRY(Value v, apply_filters(s.filters, Value::string(std::move(text)), scope));
        ARCH_TRY_STATUS(print(out, v, s.pos));
        break;
      }
      case Stmt::Kind::Macro:
        scope->vars[s.name] = make_macro(s, scope);
        break;
      case Stmt::Kind::With: {
        auto inner = child(scope);
        for (const auto& [target, e] : s.assigns) {
          ARCH_TRY(Value v, eval(*e, scope));
          ARCH_TRY_STATUS(assign(target, v, inner));
        }
        ARCH_TRY(Flow f, exec_body(s.body, inner, out));
        return f;
      }
      case Stmt::Kind::Generation: return exec_body(s.body, scope, out);
      case Stmt::Kind::Break: return Flow::Break;
      case Stmt::Kind::Continue: return Flow::Continue;
    }
    return Flow::Normal;
  }

  // {{ v }}: str(v) appended to out.
  Status print(std::string& out, const Value& v, Pos pos) {
    if (v.is_string()) return append_text(out, v.as_string(), pos);
    auto text = to_str(v);
    if (!text.ok()) return at(pos, text.error());
    return append_text(out, *text, pos);
  }

  // Blocks, expressions and macro calls being evaluated at once bound the
  // interpreter's stack: chat_depth.
  Error too_deep(Pos pos) const {
    return at(pos, check_depth(nesting_, "the nesting of blocks, expressions and macro calls being evaluated").error());
  }

  // One more pass of a loop over the render's budget.
  Status iteration(Pos pos) {
    static const std::string what = "the loop iterations of this render";  // built once: this runs per iteration
    auto st = count_iterations(1, what);
    if (!st.ok()) return at(pos, st.error());
    return {};
  }

  Result<Flow> exec_for(const Stmt& s, const ScopePtr& scope, std::string& out) {
    ARCH_TRY(Value iterable, eval(*s.expr, scope));
    auto state = std::make_shared<LoopState>();
    if (iterable.is_list() && !s.cond) {
      state->list = iterable;
    } else {
      auto items = iterate(iterable);
      if (!items.ok()) return at(s.expr->pos, items.error());
      std::vector<Value> kept;
      if (s.cond) {
        for (Value& item : *items) {
          ARCH_TRY_STATUS(iteration(s.pos));
          auto probe = child(scope);
          ARCH_TRY_STATUS(assign(s.target, item, probe));
          ARCH_TRY(Value keep, eval(*s.cond, probe));
          if (truthy(keep)) kept.push_back(std::move(item));
        }
      } else {
        kept = std::move(*items);
      }
      state->list = Value::list(std::move(kept));
    }
    const std::vector<Value>& items = state->items();
    if (items.empty()) {
      ARCH_TRY(Flow f, exec_body(s.else_body, child(scope), out));
      (void)f;
      return Flow::Normal;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      if (!s.cond) ARCH_TRY_STATUS(iteration(s.pos));  // a filtered loop counted its items as it probed them
      auto frame = child(scope);
      frame->vars["loop"] = Value::object(std::make_shared<LoopContext>(state, i));
      ARCH_TRY_STATUS(assign(s.target, items[i], frame));
      ARCH_TRY(Flow f, exec_body(s.body, frame, out));
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  Status assign(const Target& t, const Value& v, const ScopePtr& scope) {
    if (value_depth(v) > max_nesting_)
      return at(t.pos, check_depth(value_depth(v), "the nesting of the lists, dicts and namespaces of a value").error());
    switch (t.kind) {
      case Target::Kind::Name:
        scope->vars[t.names[0]] = v;
        return {};
      case Target::Kind::Tuple: {
        auto items = iterate(v);
        if (!items.ok()) return at(t.pos, error("cannot unpack non-iterable " + type_name(v) + " object"));
        if (items->size() != t.names.size()) {
          if (items->size() > t.names.size())
            return at(t.pos, error("too many values to unpack (expected " + std::to_string(t.names.size()) + ")"));
          return at(t.pos, error("not enough values to unpack (expected " + std::to_string(t.names.size()) +
                                 ", got " + std::to_string(items->size()) + ")"));
        }
        for (size_t i = 0; i < items->size(); ++i) scope->vars[t.names[i]] = (*items)[i];
        return {};
      }
      case Target::Kind::NamespaceAttr: {
        const Value* ns = scope->find(t.names[0]);
        if (!ns || !ns->is_object() || ns->object().type_name() != "Namespace")
          return at(t.pos, error("cannot assign attribute '" + t.attr + "' on '" + t.names[0] +
                                 "': it is not a namespace()"));
        ns->object().set_attr(t.attr, v);
        return {};
      }
    }
    return {};
  }

  Result<Value> apply_filters(const std::vector<ExprPtr>& filters, Value v, const ScopePtr& scope) {
    for (const auto& f : filters) {
      ARCH_TRY(v, eval_filter(*f, v, scope));
    }
    return v;
  }

  // ---- macros ----

  Value make_macro(const Stmt& s, const ScopePtr& defined_in) {
    macro_scopes_.push_back(defined_in);
    const Stmt* macro = &s;
    bool varargs = mentions(s.body, "varargs"), kwargs = mentions(s.body, "kwargs");
    std::string name = s.name;
    return Value::function("macro '" + name + "'", [this, macro, defined_in, varargs, kwargs, name](
                                                       const CallArgs& a) -> Result<Value> {
      auto frame = child(defined_in);
      const auto& params = macro->params;
      if (a.positional.size() > params.size() && !varargs)
        return error("macro '" + name + "' takes not more than " + std::to_string(params.size()) +
                     " argument(s)");
      std::vector<std::optional<Value>> bound(params.size());
      for (size_t i = 0; i < a.positional.size() && i < params.size(); ++i) bound[i] = a.positional[i];
      std::vector<std::pair<Value, Value>> extra_kw;
      for (const auto& [k, v] : a.keyword) {
        size_t i = 0;
        while (i < params.size() && params[i].first != k) ++i;
        if (i < params.size()) {
          if (bound[i]) return error("macro '" + name + "' got multiple values for argument '" + k + "'");
          bound[i] = v;
        } else if (kwargs) {
          extra_kw.emplace_back(Value::string(k), v);
        } else {
          return error("macro '" + name + "' takes no keyword argument '" + k + "'");
        }
      }
      for (size_t i = 0; i < params.size(); ++i) {
        if (bound[i]) {
          frame->vars[params[i].first] = *bound[i];
        } else if (params[i].second) {
          ARCH_TRY(Value d, eval(*params[i].second, frame));
          frame->vars[params[i].first] = d;
        } else {
          frame->vars[params[i].first] = Value::undefined("parameter '" + params[i].first + "' was not provided");
        }
      }
      if (varargs) {
        std::vector<Value> rest;
        for (size_t i = params.size(); i < a.positional.size(); ++i) rest.push_back(a.positional[i]);
        frame->vars["varargs"] = Value::list(std::move(rest), true);
      }
      if (kwargs) frame->vars["kwargs"] = Value::dict(std::move(extra_kw));
      std::string text;
      auto f = exec_body(macro->body, frame, text);
      if (!f.ok()) return f.error();
      return Value::string(std::move(text));
    });
  }

  // ---- expressions ----

  Result<CallArgs> eval_args(const Expr& e, size_t first, const ScopePtr& scope) {
    CallArgs a;
    for (size_t i = first; i < e.args.size(); ++i) {
      ARCH_TRY(Value v, eval(*e.args[i], scope));
      a.positional.push_back(std::move(v));
    }
    for (const auto& [k, x] : e.kwargs) {
      ARCH_TRY(Value v, eval(*x, scope));
      a.keyword.emplace_back(k, std::move(v));
    }
    if (e.dyn_args) {
      ARCH_TRY(Value v, eval(*e.dyn_args, scope));
      auto items = iterate(v);
      if (!items.ok()) return at(e.dyn_args->pos, items.error());
      a.positional.insert(a.positional.end(), items->begin(), items->end());
    }
    if (e.dyn_kwargs) {
      ARCH_TRY(Value v, eval(*e.dyn_kwargs, scope));
      if (!v.is_dict()) return error(located(e.dyn_kwargs->pos, "argument after ** must be a mapping, not " + type_name(v)));
      for (const auto& [k, x] : v.dict().items) {
        if (!k.is_string()) return error(located(e.dyn_kwargs->pos, "keywords must be strings"));
        a.keyword.emplace_back(k.as_string(), x);
      }
    }
    return a;
  }

  Result<Value> eval_filter(const Expr& e, const Value& operand, const ScopePtr& scope) {
    ARCH_TRY(CallArgs a, eval_args(e, 1, scope));
    auto r = apply_filter(e.name, operand, a);
    if (!r.ok() && filter_support(e.name) != Support::Yes) return at(e.pos, r.error());
    if (!r.ok()) return at(e.pos, r.error(), "filter '" + e.name + "'");
    return r;
  }

  struct Nesting {
    int64_t& n;
    explicit Nesting(int64_t& depth) : n(++depth) {}
    ~Nesting() { --n; }
  };

  Result<Value> eval(const Expr& e, const ScopePtr& scope) {
    Nesting guard(nesting_);
    if (nesting_ > max_nesting_) return too_deep(e.pos);
    return eval_node(e, scope);
  }

  Result<Value> eval_node(const Expr& e, const ScopePtr& scope) {
    switch (e.kind) {
      case Expr::Kind::Literal: return e.literal;
      case Expr::Kind::Name: {
        if (const Value* v = scope->find(e.name)) return *v;
        return Value::undefined("'" + e.name + "' is undefined");
      }
      case Expr::Kind::List:
      case Expr::Kind::Tuple: {
        std::vector<Value> items;
        for (const auto& x : e.args) {
          ARCH_TRY(Value v, eval(*x, scope));
          items.push_back(std::move(v));
        }
        return Value::list(std::move(items), e.kind == Expr::Kind::Tuple);
      }
      case Expr::Kind::Dict: {
        auto d = std::make_shared<DictData>();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          ARCH_TRY(Value k, eval(*e.args[i], scope));
          ARCH_TRY(Value v, eval(*e.args[i + 1], scope));
          if (!hashable(k))
            return error(located(e.args[i]->pos, "unhashable type: '" + type_name(k) + "'"));
          d->set(std::move(k), std::move(v));
        }
        return Value::dict(std::move(d));
      }
      case Expr::Kind::GetAttr: {
        ARCH_TRY(Value obj, eval(*e.args[0], scope));
        auto r = get_attr(obj, e.name);
        if (!r.ok()) return at(e.pos, r.error());
        return r;
      }
      case Expr::Kind::GetItem: {
        ARCH_TRY(Value obj, eval(*e.args[0], scope));
        ARCH_TRY(Value key, eval(*e.args[1], scope));
        auto r = get_item(obj, key);
        if (!r.ok()) return at(e.pos, r.error());
        return r;
      }
      case Expr::Kind::Slice: {
        ARCH_TRY(Value obj, eval(*e.args[0], scope));
        Value parts[3];
        for (int i = 0; i < 3; ++i) {
          if (e.args[i + 1]) {
            ARCH_TRY(parts[i], eval(*e.args[i + 1], scope));
          } else {
            parts[i] = Value::none();
          }
        }
        auto r = get_slice(obj, parts[0], parts[1], parts[2]);
        if (!r.ok()) return at(e.pos, r.error());
        return r;
      }
      case Expr::Kind::Call: {
        ARCH_TRY(Value callee, eval(*e.args[0], scope));
        ARCH_TRY(CallArgs a, eval_args(e, 1, scope));
        if (callee.is_undefined()) return at(e.pos, undefined_error(callee));
        if (!callee.is_function()) return at(e.pos, error("'" + type_name(callee) + "' object is not callable"));
        const Function& f = callee.function();
        auto r = f.call(a);
        if (!r.ok()) return at(e.pos, r.error(), f.name);
        return r;
      }
      case Expr::Kind::Filter: {
        Value operand;
        if (e.args[0]) {
          ARCH_TRY(operand, eval(*e.args[0], scope));
        }
        return eval_filter(e, operand, scope);
      }
      case Expr::Kind::Test: {
        ARCH_TRY(Value operand, eval(*e.args[0], scope));
        ARCH_TRY(CallArgs a, eval_args(e, 1, scope));
        auto r = apply_test(e.name, operand, a);
        if (!r.ok() && test_support(e.name) != Support::Yes) return at(e.pos, r.error());
        if (!r.ok()) return at(e.pos, r.error(), "test '" + e.name + "'");
        return Value::boolean(*r);
      }
      case Expr::Kind::Not: {
        ARCH_TRY(Value v, eval(*e.args[0], scope));
        return Value::boolean(!truthy(v));
      }
      case Expr::Kind::Neg:
      case Expr::Kind::Pos: {
        ARCH_TRY(Value v, eval(*e.args[0], scope));
        auto r = e.kind == Expr::Kind::Neg ? negate(v) : unary_plus(v);
        if (!r.ok()) return at(e.pos, r.error());
        return r;
      }
      case Expr::Kind::Binary: {
        ARCH_TRY(Value a, eval(*e.args[0], scope));
        if (e.name == "and") {
          if (!truthy(a)) return a;
          return eval(*e.args[1], scope);
        }
        if (e.name == "or") {
          if (truthy(a)) return a;
          return eval(*e.args[1], scope);
        }
        ARCH_TRY(Value b, eval(*e.args[1], scope));
        auto r = binary_op(e.name, a, b);
        if (!r.ok()) return at(e.pos, r.error());
        return r;
      }
      case Expr::Kind::Compare: {
        ARCH_TRY(Value left, eval(*e.args[0], scope));
        for (size_t i = 0; i < e.ops.size(); ++i) {
          ARCH_TRY(Value right, eval(*e.args[i + 1], scope));
          const std::string& op = e.ops[i];
          Result<bool> r = op == "in"      ? contains(right, left)
                           : op == "notin" ? contains(right, left)
                                           : compare_op(op, left, right);
          if (!r.ok()) return at(e.pos, r.error());
          bool ok = op == "notin" ? !*r : *r;
          if (!ok) return Value::boolean(false);
          left = std::move(right);
        }
        return Value::boolean(true);
      }
      case Expr::Kind::CondExpr: {
        ARCH_TRY(Value c, eval(*e.args[1], scope));
        if (truthy(c)) return eval(*e.args[0], scope);
        if (e.args[2]) return eval(*e.args[2], scope);
        return Value::undefined("the inline if-expression on line " + std::to_string(e.pos.line) +
                                " evaluated to false and no else section was defined.");
      }
    }
    return Value();
  }

  const RenderOptions& options_;
  const int64_t max_nesting_;  // chat_depth
  int64_t nesting_ = 0;        // eval/exec frames
  std::vector<std::weak_ptr<Scope>> macro_scopes_;  // unlinked when the render ends
  std::vector<std::weak_ptr<Namespace>> namespaces_;
};

}  // namespace

Result<std::string> render_body(const Body& body, const Value& context, const RenderOptions& options) {
  if (!context.is_dict()) return error("chat_template: the context must be a JSON object");
  RenderBudget budget;
  Interpreter interp(options, budget);
  return interp.run(body, context);
}

}  // namespace arch::jinja

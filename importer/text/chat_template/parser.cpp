#include "importer/text/chat_template/parser.h"

#include <algorithm>
#include <set>

#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/filters.h"
#include "importer/text/chat_template/predicates.h"

namespace arch::jinja {

namespace {

// Jinja2 tags that transformers' environment knows but this interpreter does
// not run (templates of chat models do not use them).
const std::set<std::string> kUnsupportedTags = {"block",  "extends", "include",   "import",
                                                "from",   "call",    "autoescape"};
// Tags that only continue or close a block.
const std::set<std::string> kInnerTags = {
    "elif",    "else",       "endif",  "endfor",  "endset",        "endmacro",   "endfilter",
    "endwith", "endblock",   "endcall", "endraw", "endgeneration", "endautoescape"};

std::string quoted(const std::string& s) { return "'" + s + "'"; }

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::Text: return "template text";
    case Tok::VarBegin: return "'{{'";
    case Tok::VarEnd: return "'}}'";
    case Tok::BlockBegin: return "'{%'";
    case Tok::BlockEnd: return "'%}'";
    case Tok::Name: return quoted(t.text);
    case Tok::String: return "a string";
    case Tok::Int: return "an integer";
    case Tok::Float: return "a number";
    case Tok::Op: return quoted(t.text);
    case Tok::Eof: return "the end of the template";
  }
  return "?";
}

std::string join_quoted(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " or " : ", ";
    out += quoted(names[i]);
  }
  return out;
}

struct OpenBlock {
  std::string tag;
  Pos pos;
  std::vector<std::string> ends;
};

// A slice written inside [...]: x[a:b:c]
struct Subscript {
  ExprPtr index;  // plain index
  bool is_slice = false;
  ExprPtr start, stop, step;
};

// Nesting is bounded by the limit chat_depth three ways, so neither this
// recursive-descent parser nor anything that walks its tree can exhaust the
// stack: open blocks, the parser's own recursion into an expression, and
// the height of each expression tree, which also grows without recursion
// ("1 + 1 + ... + 1", "x|f|f|f...").
class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens), max_depth_(depth_cap()) {}

  Result<Body> parse_template() {
    ARCH_TRY(Body body, subparse({}));
    if (cur().kind != Tok::Eof) return fail(cur(), "unexpected " + describe(cur()));
    return body;
  }

 private:
  // ---- token stream ----
  const Token& cur() const { return t_[i_]; }
  const Token& peek() const { return t_[std::min(i_ + 1, t_.size() - 1)]; }
  void next() {
    if (i_ + 1 < t_.size()) ++i_;
  }
  bool is_op(const char* op) const { return cur().kind == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().kind == Tok::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    next();
    return true;
  }
  Error fail(const Token& t, const std::string& message) const {
    return error(located(t.pos, message));
  }
  Error fail_at(Pos p, const std::string& message) const { return error(located(p, message)); }
  Status expect_op(const char* op, const std::string& context) {
    if (skip_op(op)) return {};
    return fail(cur(), "expected '" + std::string(op) + "' " + context + ", got " + describe(cur()));
  }
  Status expect_block_end(const std::string& what) {
    if (cur().kind == Tok::BlockEnd) {
      next();
      return {};
    }
    return fail(cur(), "expected '%}' to end the '" + what + "' tag, got " + describe(cur()));
  }
  Result<std::string> expect_name(const std::string& context) {
    if (cur().kind != Tok::Name) return fail(cur(), "expected a name " + context + ", got " + describe(cur()));
    std::string n = cur().text;
    next();
    return n;
  }

  // ---- statements ----

  // Statements and text up to "{% <one of ends>" (left as the current token)
  // or the end of the template.
  Result<Body> subparse(const std::vector<std::string>& ends) {
    Body body;
    while (true) {
      const Token& t = cur();
      if (t.kind == Tok::Eof) return body;
      if (t.kind == Tok::Text) {
        auto s = std::make_unique<Stmt>(Stmt::Kind::Text, t.pos);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.kind == Tok::VarBegin) {
        Pos p = t.pos;
        next();
        ARCH_TRY(ExprPtr e, parse_tuple(false, true, {}, false));
        if (cur().kind != Tok::VarEnd)
          return fail(cur(), "expected '}}' to end '{{ ... }}', got " + describe(cur()));
        next();
        auto s = std::make_unique<Stmt>(Stmt::Kind::Print, p);
        s->exprs.push_back(std::move(e));
        body.push_back(std::move(s));
      } else if (t.kind == Tok::BlockBegin) {
        next();
        if (cur().kind != Tok::Name) return fail(cur(), "expected a tag name after '{%', got " + describe(cur()));
        if (std::find(ends.begin(), ends.end(), cur().text) != ends.end()) return body;
        ARCH_TRY(StmtPtr s, parse_statement());
        if (s) body.push_back(std::move(s));
      } else {
        return fail(t, "unexpected " + describe(t));
      }
    }
  }

  // "%}" then the body up to one of `ends`; the end tag's name is current.
  Result<Body> parse_block_body(const std::string& tag, Pos open, std::vector<std::string> ends) {
    skip_op(":");
    ARCH_TRY_STATUS(expect_block_end(tag));
    if (int64_t(blocks_.size()) >= max_depth_)
      return too_deep(open, int64_t(blocks_.size()) + 1, "the nesting of blocks");
    blocks_.push_back({tag, open, ends});
    auto body = subparse(ends);
    blocks_.pop_back();
    if (!body.ok()) return body;
    if (cur().kind == Tok::Eof)
      return fail_at(open, "'" + tag + "' block is never closed: expected " + join_quoted(ends) +
                               " before the end of the template");
    return body;
  }

  // After a block's final end tag name: "%}" is checked by the caller.
  Status expect_end(const std::string& end) {
    if (!is_name(end.c_str())) return fail(cur(), "expected '" + end + "', got " + describe(cur()));
    next();
    return {};
  }

  Result<StmtPtr> parse_statement() {
    const Token& t = cur();
    std::string tag = t.text;
    Pos p = t.pos;
    StmtPtr s;
    if (tag == "for") {
      ARCH_TRY(s, parse_for());
    } else if (tag == "if") {
      ARCH_TRY(s, parse_if());
    } else if (tag == "set") {
      ARCH_TRY(s, parse_set());
    } else if (tag == "macro") {
      ARCH_TRY(s, parse_macro());
    } else if (tag == "filter") {
      ARCH_TRY(s, parse_filter_block());
    } else if (tag == "with") {
      ARCH_TRY(s, parse_with());
    } else if (tag == "print") {
      next();
      s = std::make_unique<Stmt>(Stmt::Kind::Print, p);
      while (cur().kind != Tok::BlockEnd) {
        if (!s->exprs.empty()) ARCH_TRY_STATUS(expect_op(",", "between 'print' expressions"));
        ARCH_TRY(ExprPtr e, parse_expression(true));
        s->exprs.push_back(std::move(e));
      }
    } else if (tag == "break" || tag == "continue") {
      if (loop_depth_ == 0) return fail(t, "'" + tag + "' outside of a 'for' loop");
      next();
      s = std::make_unique<Stmt>(tag == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue, p);
    } else if (tag == "generation") {
      next();
      s = std::make_unique<Stmt>(Stmt::Kind::Generation, p);
      ARCH_TRY(s->body, parse_block_body("generation", p, {"endgeneration"}));
      ARCH_TRY_STATUS(expect_end("endgeneration"));
    } else if (kUnsupportedTags.count(tag)) {
      return fail(t, "'" + tag + "' tags are not supported in chat templates");
    } else if (kInnerTags.count(tag)) {
      if (blocks_.empty()) return fail(t, "unexpected '" + tag + "': no block is open");
      const OpenBlock& b = blocks_.back();
      return fail(t, "unexpected '" + tag + "': the innermost open block is '" + b.tag + "' (line " +
                         std::to_string(b.pos.line) + ", column " + std::to_string(b.pos.col) +
                         "), which expects " + join_quoted(b.ends));
    } else {
      return fail(t, "unknown tag '" + tag + "'");
    }
    ARCH_TRY_STATUS(expect_block_end(tag));
    return s;
  }

  Result<StmtPtr> parse_for() {
    Pos p = cur().pos;
    next();
    auto s = std::make_unique<Stmt>(Stmt::Kind::For, p);
    ARCH_TRY(s->target, parse_target(false, {"in"}));
    if (!skip_name("in")) return fail(cur(), "expected 'in' in 'for' tag, got " + describe(cur()));
    ARCH_TRY(s->expr, parse_tuple(false, false, {"recursive"}, false));
    if (skip_name("if")) {
      ARCH_TRY(s->cond, parse_expression(true));
    }
    if (is_name("recursive")) return fail(cur(), "recursive 'for' loops are not supported");
    ++loop_depth_;
    auto body = parse_block_body("for", p, {"endfor", "else"});
    --loop_depth_;
    if (!body.ok()) return body.error();
    s->body = std::move(*body);
    if (skip_name("else")) {
      ARCH_TRY(s->else_body, parse_block_body("for", p, {"endfor"}));
    }
    ARCH_TRY_STATUS(expect_end("endfor"));
    return s;
  }

  Result<StmtPtr> parse_if() {
    Pos p = cur().pos;
    next();
    auto s = std::make_unique<Stmt>(Stmt::Kind::If, p);
    while (true) {
      ARCH_TRY(ExprPtr cond, parse_tuple(false, false, {}, false));
      ARCH_TRY(Body body, parse_block_body("if", p, {"elif", "else", "endif"}));
      s->branches.emplace_back(std::move(cond), std::move(body));
      if (skip_name("elif")) continue;
      if (skip_name("else")) {
        ARCH_TRY(s->else_body, parse_block_body("if", p, {"endif"}));
      }
      break;
    }
    ARCH_TRY_STATUS(expect_end("endif"));
    return s;
  }

  Result<StmtPtr> parse_set() {
    Pos p = cur().pos;
    next();
    ARCH_TRY(Target target, parse_target(true, {}));
    if (skip_op("=")) {
      auto s = std::make_unique<Stmt>(Stmt::Kind::Set, p);
      s->target = std::move(target);
      ARCH_TRY(s->expr, parse_tuple(false, true, {}, false));
      return s;
    }
    auto s = std::make_unique<Stmt>(Stmt::Kind::SetBlock, p);
    s->target = std::move(target);
    while (skip_op("|")) {
      ARCH_TRY(ExprPtr f, parse_filter(nullptr));
      s->filters.push_back(std::move(f));
    }
    ARCH_TRY(s->body, parse_block_body("set", p, {"endset"}));
    ARCH_TRY_STATUS(expect_end("endset"));
    return s;
  }

  Result<StmtPtr> parse_macro() {
    Pos p = cur().pos;
    next();
    auto s = std::make_unique<Stmt>(Stmt::Kind::Macro, p);
    ARCH_TRY(s->name, expect_name("after 'macro'"));
    ARCH_TRY_STATUS(expect_op("(", "after the macro name"));
    bool defaults = false;
    while (!is_op(")")) {
      if (!s->params.empty()) ARCH_TRY_STATUS(expect_op(",", "between macro parameters"));
      Pos ppos = cur().pos;
      ARCH_TRY(std::string name, expect_name("for a macro parameter"));
      ExprPtr def;
      if (skip_op("=")) {
        ARCH_TRY(def, parse_expression(true));
        defaults = true;
      } else if (defaults) {
        return fail_at(ppos, "macro parameter '" + name + "' without a default follows one with a default");
      }
      s->params.emplace_back(name, std::move(def));
    }
    next();
    int saved = loop_depth_;
    loop_depth_ = 0;
    auto body = parse_block_body("macro", p, {"endmacro"});
    loop_depth_ = saved;
    if (!body.ok()) return body.error();
    s->body = std::move(*body);
    ARCH_TRY_STATUS(expect_end("endmacro"));
    return s;
  }

  Result<StmtPtr> parse_filter_block() {
    Pos p = cur().pos;
    next();
    auto s = std::make_unique<Stmt>(Stmt::Kind::FilterBlock, p);
    do {
      ARCH_TRY(ExprPtr f, parse_filter(nullptr));
      s->filters.push_back(std::move(f));
    } while (skip_op("|"));
    ARCH_TRY(s->body, parse_block_body("filter", p, {"endfilter"}));
    ARCH_TRY_STATUS(expect_end("endfilter"));
    return s;
  }

  Result<StmtPtr> parse_with() {
    Pos p = cur().pos;
    next();
    auto s = std::make_unique<Stmt>(Stmt::Kind::With, p);
    while (cur().kind != Tok::BlockEnd) {
      if (!s->assigns.empty()) ARCH_TRY_STATUS(expect_op(",", "between 'with' assignments"));
      ARCH_TRY(Target target, parse_target(false, {}));
      ARCH_TRY_STATUS(expect_op("=", "in a 'with' assignment"));
      ARCH_TRY(ExprPtr value, parse_expression(true));
      s->assigns.emplace_back(std::move(target), std::move(value));
    }
    ARCH_TRY(s->body, parse_block_body("with", p, {"endwith"}));
    ARCH_TRY_STATUS(expect_end("endwith"));
    return s;
  }

  // A name, names separated by commas (optionally in parentheses), or with
  // `allow_ns` a namespace attribute `ns.attr`.
  Result<Target> parse_target(bool allow_ns, const std::vector<std::string>& extra_end) {
    Target target;
    target.pos = cur().pos;
    bool tuple = false;
    while (true) {
      if (!target.names.empty()) ARCH_TRY_STATUS(expect_op(",", "between assignment targets"));
      if (is_tuple_end(extra_end) || is_op("=")) break;
      if (is_op("(")) {
        if (!target.names.empty()) return fail(cur(), "nested tuple targets are not supported");
        next();
        ARCH_TRY(Target inner, parse_target(false, {}));
        ARCH_TRY_STATUS(expect_op(")", "to close the target"));
        if (inner.kind == Target::Kind::NamespaceAttr) return fail_at(inner.pos, "cannot assign to this target");
        target.names = inner.names;
        tuple = true;
      } else {
        const Token& t = cur();
        if (t.kind != Tok::Name) return fail(t, "cannot assign to " + describe(t));
        static const std::set<std::string> kConstants = {"true", "false", "True", "False", "none", "None"};
        if (kConstants.count(t.text)) return fail(t, "cannot assign to '" + t.text + "'");
        std::string name = t.text;
        next();
        if (allow_ns && is_op(".")) {
          next();
          ARCH_TRY(std::string attr, expect_name("after '.' in an assignment target"));
          if (!target.names.empty() || is_op(","))
            return fail_at(target.pos, "namespace attributes cannot be assigned in a tuple");
          target.kind = Target::Kind::NamespaceAttr;
          target.names = {name};
          target.attr = attr;
          return target;
        }
        target.names.push_back(name);
      }
      if (is_op(",")) tuple = true;
      else break;
    }
    if (target.names.empty()) return fail(cur(), "expected an assignment target, got " + describe(cur()));
    target.kind = tuple ? Target::Kind::Tuple : Target::Kind::Name;
    return target;
  }

  // ---- expressions ----

  bool is_tuple_end(const std::vector<std::string>& extra_end) const {
    if (cur().kind == Tok::VarEnd || cur().kind == Tok::BlockEnd || is_op(")")) return true;
    if (cur().kind == Tok::Name)
      for (const auto& e : extra_end)
        if (cur().text == e) return true;
    return false;
  }

  Result<ExprPtr> parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                              bool explicit_parentheses) {
    Pos p = cur().pos;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) ARCH_TRY_STATUS(expect_op(",", "between tuple items"));
      if (is_tuple_end(extra_end)) break;
      if (simplified) {
        ARCH_TRY(ExprPtr e, parse_primary());
        items.push_back(std::move(e));
      } else {
        ARCH_TRY(ExprPtr e, parse_expression(with_condexpr));
        items.push_back(std::move(e));
      }
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items[0]);
      if (!explicit_parentheses) return fail(cur(), "expected an expression, got " + describe(cur()));
    }
    auto e = std::make_unique<Expr>(Expr::Kind::Tuple, p);
    e->args = std::move(items);
    ARCH_TRY_STATUS(seal(*e));
    return e;
  }

  // Records the height of a freshly built node; too deep is an error.
  Status seal(Expr& e) {
    int d = 0;
    for (const auto& a : e.args)
      if (a) d = std::max(d, a->depth);
    for (const auto& [k, a] : e.kwargs) d = std::max(d, a->depth);
    if (e.dyn_args) d = std::max(d, e.dyn_args->depth);
    if (e.dyn_kwargs) d = std::max(d, e.dyn_kwargs->depth);
    e.depth = d + 1;
    if (e.depth > max_depth_)
      return too_deep(e.pos, e.depth, "the height of the expression (operators nested or chained)");
    return {};
  }

  Error too_deep(Pos p, int64_t depth, const std::string& what) const {
    return fail_at(p, check_depth(depth, what).error().message);
  }

  // One level of recursion into an expression.
  Status enter_expression() {
    if (depth_ > max_depth_) return too_deep(cur().pos, depth_, "the nesting of the expression");
    return {};
  }

  struct DepthGuard {
    int64_t& d;
    explicit DepthGuard(int64_t& depth) : d(++depth) {}
    ~DepthGuard() { --d; }
  };

  Result<ExprPtr> parse_expression(bool with_condexpr) {
    DepthGuard g(depth_);
    ARCH_TRY_STATUS(enter_expression());
    if (!with_condexpr) return parse_or();
    Pos p = cur().pos;
    ARCH_TRY(ExprPtr e, parse_or());
    while (skip_name("if")) {
      auto c = std::make_unique<Expr>(Expr::Kind::CondExpr, p);
      ARCH_TRY(ExprPtr cond, parse_or());
      ExprPtr otherwise;
      if (skip_name("else")) {
        ARCH_TRY(otherwise, parse_expression(true));
      }
      c->args.push_back(std::move(e));
      c->args.push_back(std::move(cond));
      c->args.push_back(std::move(otherwise));
      ARCH_TRY_STATUS(seal(*c));
      e = std::move(c);
    }
    return e;
  }

  Result<ExprPtr> binary(const std::string& op, Pos p, ExprPtr a, ExprPtr b) {
    auto e = std::make_unique<Expr>(Expr::Kind::Binary, p);
    e->name = op;
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    ARCH_TRY_STATUS(seal(*e));
    return ExprPtr(std::move(e));
  }

  Result<ExprPtr> parse_or() {
    ARCH_TRY(ExprPtr left, parse_and());
    while (is_name("or")) {
      Pos p = cur().pos;
      next();
      ARCH_TRY(ExprPtr right, parse_and());
      ARCH_TRY(left, binary("or", p, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    ARCH_TRY(ExprPtr left, parse_not());
    while (is_name("and")) {
      Pos p = cur().pos;
      next();
      ARCH_TRY(ExprPtr right, parse_not());
      ARCH_TRY(left, binary("and", p, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (is_name("not")) {
      DepthGuard g(depth_);
      ARCH_TRY_STATUS(enter_expression());
      auto e = std::make_unique<Expr>(Expr::Kind::Not, cur().pos);
      next();
      ARCH_TRY(ExprPtr operand, parse_not());
      e->args.push_back(std::move(operand));
      ARCH_TRY_STATUS(seal(*e));
      return e;
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    ARCH_TRY(ExprPtr first, parse_math1());
    std::unique_ptr<Expr> cmp;
    while (true) {
      std::string op;
      Pos op_pos = cur().pos;
      if (cur().kind == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
        op = cur().text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && peek().kind == Tok::Name && peek().text == "in") {
        op = "notin";
        next();
        next();
      } else {
        break;
      }
      if (!cmp) {
        cmp = std::make_unique<Expr>(Expr::Kind::Compare, op_pos);
        cmp->args.push_back(std::move(first));
      }
      ARCH_TRY(ExprPtr operand, parse_math1());
      cmp->ops.push_back(op);
      cmp->args.push_back(std::move(operand));
    }
    if (cmp) {
      ARCH_TRY_STATUS(seal(*cmp));
      return ExprPtr(std::move(cmp));
    }
    return first;
  }

  Result<ExprPtr> parse_math1() {
    ARCH_TRY(ExprPtr left, parse_concat());
    while (is_op("+") || is_op("-")) {
      std::string op = cur().text;
      Pos p = cur().pos;
      next();
      ARCH_TRY(ExprPtr right, parse_concat());
      ARCH_TRY(left, binary(op, p, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> parse_concat() {
    ARCH_TRY(ExprPtr left, parse_math2());
    while (is_op("~")) {
      Pos p = cur().pos;
      next();
      ARCH_TRY(ExprPtr right, parse_math2());
      ARCH_TRY(left, binary("~", p, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> parse_math2() {
    ARCH_TRY(ExprPtr left, parse_pow());
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = cur().text;
      Pos p = cur().pos;
      next();
      ARCH_TRY(ExprPtr right, parse_pow());
      ARCH_TRY(left, binary(op, p, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> parse_pow() {
    ARCH_TRY(ExprPtr left, parse_unary(true));
    while (is_op("**")) {
      Pos p = cur().pos;
      next();
      ARCH_TRY(ExprPtr right, parse_unary(true));
      ARCH_TRY(left, binary("**", p, std::move(left), std::move(right)));
    }
    return left;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard g(depth_);
    ARCH_TRY_STATUS(enter_expression());
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      auto e = std::make_unique<Expr>(is_op("-") ? Expr::Kind::Neg : Expr::Kind::Pos, cur().pos);
      next();
      ARCH_TRY(ExprPtr operand, parse_unary(false));
      e->args.push_back(std::move(operand));
      ARCH_TRY_STATUS(seal(*e));
      node = std::move(e);
    } else {
      ARCH_TRY(node, parse_primary());
    }
    ARCH_TRY(node, parse_postfix(std::move(node)));
    if (with_filter) {
      ARCH_TRY(node, parse_filter_expr(std::move(node)));
    }
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& t = cur();
    Pos p = t.pos;
    switch (t.kind) {
      case Tok::Name: {
        auto e = std::make_unique<Expr>(Expr::Kind::Literal, p);
        if (t.text == "true" || t.text == "True") e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False") e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None") e->literal = Value::none();
        else {
          e->kind = Expr::Kind::Name;
          e->name = t.text;
        }
        next();
        return ExprPtr(std::move(e));
      }
      case Tok::String: {
        std::string s;
        while (cur().kind == Tok::String) {  // adjacent literals concatenate
          s += cur().text;
          next();
        }
        auto e = std::make_unique<Expr>(Expr::Kind::Literal, p);
        e->literal = Value::string(std::move(s));
        return ExprPtr(std::move(e));
      }
      case Tok::Int:
      case Tok::Float: {
        auto e = std::make_unique<Expr>(Expr::Kind::Literal, p);
        e->literal = t.kind == Tok::Int ? Value::integer(t.ival) : Value::number(t.fval);
        next();
        return ExprPtr(std::move(e));
      }
      case Tok::Op:
        if (t.text == "(") {
          next();
          ARCH_TRY(ExprPtr e, parse_tuple(false, true, {}, true));
          ARCH_TRY_STATUS(expect_op(")", "to close '(' at line " + std::to_string(p.line) + ", column " +
                                             std::to_string(p.col)));
          return e;
        }
        if (t.text == "[") return parse_list();
        if (t.text == "{") return parse_dict();
        break;
      default: break;
    }
    return fail(t, "expected an expression, got " + describe(t));
  }

  Result<ExprPtr> parse_list() {
    auto e = std::make_unique<Expr>(Expr::Kind::List, cur().pos);
    next();
    while (!is_op("]")) {
      if (!e->args.empty()) ARCH_TRY_STATUS(expect_op(",", "between list items"));
      if (is_op("]")) break;
      ARCH_TRY(ExprPtr item, parse_expression(true));
      e->args.push_back(std::move(item));
    }
    next();
    ARCH_TRY_STATUS(seal(*e));
    return ExprPtr(std::move(e));
  }

  Result<ExprPtr> parse_dict() {
    auto e = std::make_unique<Expr>(Expr::Kind::Dict, cur().pos);
    next();
    while (!is_op("}")) {
      if (!e->args.empty()) ARCH_TRY_STATUS(expect_op(",", "between dict items"));
      if (is_op("}")) break;
      ARCH_TRY(ExprPtr key, parse_expression(true));
      ARCH_TRY_STATUS(expect_op(":", "after a dict key"));
      ARCH_TRY(ExprPtr value, parse_expression(true));
      e->args.push_back(std::move(key));
      e->args.push_back(std::move(value));
    }
    next();
    ARCH_TRY_STATUS(seal(*e));
    return ExprPtr(std::move(e));
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        next();
        const Token& a = cur();
        if (a.kind == Tok::Name) {
          auto e = std::make_unique<Expr>(Expr::Kind::GetAttr, a.pos);
          e->name = a.text;
          e->args.push_back(std::move(node));
          ARCH_TRY_STATUS(seal(*e));
          node = std::move(e);
        } else if (a.kind == Tok::Int) {
          auto e = std::make_unique<Expr>(Expr::Kind::GetItem, a.pos);
          auto idx = std::make_unique<Expr>(Expr::Kind::Literal, a.pos);
          idx->literal = Value::integer(a.ival);
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(idx));
          ARCH_TRY_STATUS(seal(*e));
          node = std::move(e);
        } else {
          return fail(a, "expected a name or number after '.', got " + describe(a));
        }
        next();
      } else if (is_op("[")) {
        Pos p = cur().pos;
        next();
        std::vector<Subscript> subs;
        while (!is_op("]")) {
          if (!subs.empty()) ARCH_TRY_STATUS(expect_op(",", "between subscripts"));
          ARCH_TRY(Subscript s, parse_subscribed());
          subs.push_back(std::move(s));
        }
        next();
        if (subs.size() == 1 && subs[0].is_slice) {
          auto e = std::make_unique<Expr>(Expr::Kind::Slice, p);
          e->args.push_back(std::move(node));
          e->args.push_back(std::move(subs[0].start));
          e->args.push_back(std::move(subs[0].stop));
          e->args.push_back(std::move(subs[0].step));
          ARCH_TRY_STATUS(seal(*e));
          node = std::move(e);
        } else {
          auto e = std::make_unique<Expr>(Expr::Kind::GetItem, p);
          e->args.push_back(std::move(node));
          if (subs.size() == 1) {  // x[] indexes with the empty tuple, as in jinja2
            e->args.push_back(std::move(subs[0].index));
          } else {
            auto tuple = std::make_unique<Expr>(Expr::Kind::Tuple, p);
            for (auto& s : subs) {
              if (s.is_slice) return fail_at(p, "slices inside a tuple subscript are not supported");
              tuple->args.push_back(std::move(s.index));
            }
            ARCH_TRY_STATUS(seal(*tuple));
            e->args.push_back(std::move(tuple));
          }
          ARCH_TRY_STATUS(seal(*e));
          node = std::move(e);
        }
      } else if (is_op("(")) {
        ARCH_TRY(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<Subscript> parse_subscribed() {
    Subscript s;
    if (is_op(":")) {
      next();
      s.is_slice = true;
    } else {
      ARCH_TRY(ExprPtr e, parse_expression(true));
      if (!is_op(":")) {
        s.index = std::move(e);
        return s;
      }
      next();
      s.is_slice = true;
      s.start = std::move(e);
    }
    if (!is_op(":") && !is_op("]") && !is_op(",")) {
      ARCH_TRY(s.stop, parse_expression(true));
    }
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) {
        ARCH_TRY(s.step, parse_expression(true));
      }
    }
    return s;
  }

  // "(" args ")" into e (positional args appended after what e already has).
  Status parse_call_args(Expr& e) {
    Pos p = cur().pos;
    next();  // (
    bool need_comma = false;
    while (!is_op(")")) {
      if (need_comma) {
        ARCH_TRY_STATUS(expect_op(",", "between arguments"));
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        if (e.dyn_args || e.dyn_kwargs) return fail_at(p, "invalid syntax for function call expression");
        next();
        ARCH_TRY(e.dyn_args, parse_expression(true));
      } else if (is_op("**")) {
        if (e.dyn_kwargs) return fail_at(p, "invalid syntax for function call expression");
        next();
        ARCH_TRY(e.dyn_kwargs, parse_expression(true));
      } else if (cur().kind == Tok::Name && peek().kind == Tok::Op && peek().text == "=") {
        if (e.dyn_kwargs) return fail_at(p, "invalid syntax for function call expression");
        std::string key = cur().text;
        next();
        next();
        ARCH_TRY(ExprPtr v, parse_expression(true));
        e.kwargs.emplace_back(key, std::move(v));
      } else {
        if (e.dyn_args || e.dyn_kwargs || !e.kwargs.empty())
          return fail(cur(), "positional argument follows keyword argument");
        ARCH_TRY(ExprPtr v, parse_expression(true));
        e.args.push_back(std::move(v));
      }
      need_comma = true;
    }
    next();  // )
    return {};
  }

  Result<ExprPtr> parse_call(ExprPtr callee) {
    auto e = std::make_unique<Expr>(Expr::Kind::Call, callee->pos);  // errors point at the callee
    e->args.push_back(std::move(callee));
    ARCH_TRY_STATUS(parse_call_args(*e));
    ARCH_TRY_STATUS(seal(*e));
    return ExprPtr(std::move(e));
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        next();
        ARCH_TRY(node, parse_filter(std::move(node)));
      } else if (is_name("is")) {
        ARCH_TRY(node, parse_test(std::move(node)));
      } else if (is_op("(")) {
        ARCH_TRY(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<std::string> dotted_name(const std::string& what) {
    ARCH_TRY(std::string name, expect_name(what));
    while (is_op(".")) {
      next();
      ARCH_TRY(std::string more, expect_name(what));
      name += "." + more;
    }
    return name;
  }

  // The current token is the filter's name (the '|' is consumed).
  Result<ExprPtr> parse_filter(ExprPtr operand) {
    const Token& t = cur();
    auto e = std::make_unique<Expr>(Expr::Kind::Filter, t.pos);
    ARCH_TRY(e->name, dotted_name("for a filter"));
    e->args.push_back(std::move(operand));
    if (is_op("(")) ARCH_TRY_STATUS(parse_call_args(*e));
    ARCH_TRY_STATUS(seal(*e));
    return ExprPtr(std::move(e));
  }

  Result<ExprPtr> parse_test(ExprPtr operand) {
    Pos is_pos = cur().pos;
    next();  // is
    bool negated = skip_name("not");
    auto e = std::make_unique<Expr>(Expr::Kind::Test, cur().pos);
    ARCH_TRY(e->name, dotted_name("for a test after 'is'"));
    e->args.push_back(std::move(operand));
    if (is_op("(")) {
      ARCH_TRY_STATUS(parse_call_args(*e));
    } else {
      const Token& a = cur();
      bool starts_arg = a.kind == Tok::Name || a.kind == Tok::String || a.kind == Tok::Int ||
                        a.kind == Tok::Float || (a.kind == Tok::Op && (a.text == "(" || a.text == "[" || a.text == "{"));
      if (starts_arg && !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) return fail(a, "tests cannot be chained with 'is'");
        ARCH_TRY(ExprPtr arg, parse_primary());
        ARCH_TRY(arg, parse_postfix(std::move(arg)));
        e->args.push_back(std::move(arg));
      }
    }
    ARCH_TRY_STATUS(seal(*e));
    if (!negated) return ExprPtr(std::move(e));
    auto n = std::make_unique<Expr>(Expr::Kind::Not, is_pos);
    n->args.push_back(std::move(e));
    ARCH_TRY_STATUS(seal(*n));
    return ExprPtr(std::move(n));
  }

  const std::vector<Token>& t_;
  const int64_t max_depth_;  // chat_depth
  size_t i_ = 0;
  int64_t depth_ = 0;
  int loop_depth_ = 0;
  std::vector<OpenBlock> blocks_;
};

// Filter and test names are checked when the template is parsed, except
// inside an if (its tests and bodies) or a conditional expression, where
// jinja2 defers the check to when the filter runs; loops, macros and other
// blocks inside an if are checked again.
Status check_names(const Expr* e, bool deferred);

Status check_names(const Body& body, bool deferred) {
  for (const auto& s : body) {
    switch (s->kind) {
      case Stmt::Kind::If:
        for (const auto& [cond, b] : s->branches) {
          ARCH_TRY_STATUS(check_names(cond.get(), true));
          ARCH_TRY_STATUS(check_names(b, true));
        }
        ARCH_TRY_STATUS(check_names(s->else_body, true));
        break;
      case Stmt::Kind::For:
        ARCH_TRY_STATUS(check_names(s->expr.get(), deferred));
        ARCH_TRY_STATUS(check_names(s->cond.get(), false));
        ARCH_TRY_STATUS(check_names(s->body, false));
        ARCH_TRY_STATUS(check_names(s->else_body, false));
        break;
      case Stmt::Kind::Print:
      case Stmt::Kind::Set:
        for (const auto& e : s->exprs) ARCH_TRY_STATUS(check_names(e.get(), deferred));
        ARCH_TRY_STATUS(check_names(s->expr.get(), deferred));
        ARCH_TRY_STATUS(check_names(s->body, deferred));
        break;
      default:
        for (const auto& f : s->filters) ARCH_TRY_STATUS(check_names(f.get(), false));
        for (const auto& [t, e] : s->assigns) ARCH_TRY_STATUS(check_names(e.get(), false));
        for (const auto& [n, d] : s->params) ARCH_TRY_STATUS(check_names(d.get(), false));
        ARCH_TRY_STATUS(check_names(s->body, false));
        break;
    }
  }
  return {};
}

Status check_names(const Expr* e, bool deferred) {
  if (!e) return {};
  if (e->kind == Expr::Kind::CondExpr) deferred = true;
  if (!deferred && (e->kind == Expr::Kind::Filter || e->kind == Expr::Kind::Test)) {
    bool filter = e->kind == Expr::Kind::Filter;
    const char* what = filter ? "filter" : "test";
    switch (filter ? filter_support(e->name) : test_support(e->name)) {
      case Support::Yes: break;
      case Support::NotImplemented:
        return error(located(e->pos, std::string(what) + " '" + e->name + "' is not supported"));
      case Support::Unknown:
        return error(located(e->pos, "unknown " + std::string(what) + " '" + e->name + "'"));
    }
  }
  for (const auto& a : e->args) ARCH_TRY_STATUS(check_names(a.get(), deferred));
  for (const auto& [k, a] : e->kwargs) ARCH_TRY_STATUS(check_names(a.get(), deferred));
  ARCH_TRY_STATUS(check_names(e->dyn_args.get(), deferred));
  return check_names(e->dyn_kwargs.get(), deferred);
}

}  // namespace

Result<Body> parse_tokens(const std::vector<Token>& tokens) {
  ARCH_TRY(Body body, Parser(tokens).parse_template());
  ARCH_TRY_STATUS(check_names(body, false));
  return body;
}

}  // namespace arch::jinja

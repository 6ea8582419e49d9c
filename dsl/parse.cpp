#include "dsl/parse.h"

#include <algorithm>
#include <functional>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <tao/pegtl/contrib/parse_tree.hpp>

#include "engine/core/limits.h"

#include "dsl/diagnostic.h"
#include "dsl/errors.h"
#include "dsl/grammar.h"

namespace arch::dsl {

namespace pt = tao::pegtl::parse_tree;
namespace g = grammar;

// The parse tree: a node for each rule the selector below names that
// matched, with the text it matched and its children. PEGTL's own tree
// allocates a node at every level a rule passes through and for every
// alternative tried (a leaf of an expression passes ten), which took most
// of a parse (and, under the sanitizers, most of a fuzzing run). Here the
// rules append to one list as they start, in order, and a rule that fails
// cuts the list back to where it started: the same tree, no allocation
// past the list's growth.
namespace {
struct Node;

// A node's children: a view into the tree's one list of them.
struct Children {
  const Node* const* first = nullptr;
  size_t n = 0;
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
  const Node* operator[](size_t i) const { return first[i]; }
  const Node* at(size_t i) const {
    if (i >= n) throw std::out_of_range("parse tree: no child " + std::to_string(i));
    return first[i];
  }
  const Node* back() const { return at(n - 1); }
  const Node* const* begin() const { return first; }
  const Node* const* end() const { return first + n; }
};

struct Node {
  std::string_view type;                      // the rule's name (empty: the root)
  tao::pegtl::internal::iterator m_begin;     // where its text starts: byte, line, column
  const char* m_end = nullptr;
  std::string_view source;                    // the file's name, for parse errors
  int parent = -1;
  Children children;

  template <typename R>
  bool is_type() const {
    const std::string_view t = tao::pegtl::demangle<R>();
    return (type.data() == t.data() && type.size() == t.size()) || type == t;
  }
  tao::pegtl::position begin() const { return tao::pegtl::position(m_begin, source); }
  std::string string() const { return std::string(m_begin.data, m_end); }
};

// The list the rules build as they run, turned into a tree at the end.
struct TreeBuilder {
  std::vector<Node> nodes;   // in the order their rules started; [0]: the root
  std::vector<int> open;     // the selected rules under way, innermost last
  std::vector<size_t> marks; // where each rule under way that is not a node started
  std::vector<const Node*> links;  // every node's children, each node's together

  void reset() {
    nodes.clear();
    open.clear();
    marks.clear();
    nodes.emplace_back();
    open.push_back(0);
  }
  template <typename ParseInput>
  void start_node(const ParseInput& in, std::string_view type) {
    Node n;
    n.type = type;
    n.m_begin = in.iterator();
    n.source = in.source();
    n.parent = open.back();
    open.push_back(int(nodes.size()));
    nodes.push_back(n);
  }
  void end_node(const char* end) {
    nodes[size_t(open.back())].m_end = end;
    open.pop_back();
  }
  void drop_node() {
    nodes.resize(size_t(open.back()));  // it and all it had made
    open.pop_back();
  }
  // Each node's children in order: a node's index is after its parent's.
  const Node& tree() {
    std::vector<size_t> count(nodes.size(), 0), at(nodes.size(), 0);
    for (size_t i = 1; i < nodes.size(); ++i) ++count[size_t(nodes[i].parent)];
    size_t total = 0;
    for (size_t i = 0; i < nodes.size(); ++i) {
      at[i] = total;
      total += count[i];
    }
    links.assign(total, nullptr);
    for (size_t i = 1; i < nodes.size(); ++i) {
      const size_t p = size_t(nodes[i].parent);
      links[at[p] + nodes[p].children.n++] = &nodes[i];
    }
    for (size_t i = 0; i < nodes.size(); ++i) nodes[i].children.first = links.data() + at[i];
    nodes[0].m_end = nodes[0].m_begin.data;
    return nodes[0];
  }
};
}  // namespace

// The rules that become nodes of the parse tree; everything else (keywords,
// punctuation, whitespace) is dropped.
template <typename Rule>
using selector = pt::selector<
    Rule,
    pt::store_content::on<
        g::family_name, g::import_path, g::import_space, g::import_config, g::import_weights, g::config_field, g::field_name, g::scalar_type,
        g::list_type, g::field_default, g::flag_decl, g::weight_decl, g::optional_mark,
        g::weight_pattern, g::alias_decl, g::unread_decl, g::unread_pattern, g::unread_reason, g::alias_target, g::pattern_var, g::path_index,
        g::path_member, g::pattern_any, g::checkpoint_shape, g::weight_shape, g::weight_cond, g::block_def, g::block_name,
        g::param_name, g::graph_def, g::graph_name, g::graph_input, g::state_mark, g::input_dtype, g::input_default,
        g::input_shape, g::body, g::assign, g::identifier, g::output_stmt, g::output_name,
        g::return_stmt, g::if_stmt, g::for_stmt, g::loop_var, g::scope_name, g::index,
        g::number, g::string_body, g::kw_true, g::kw_false, g::kw_null, g::list_lit, g::path,
        g::path_expr, g::call, g::callee, g::kwarg, g::kwarg_name, g::transpose, g::negated,
        g::postfix, g::product, g::op_mul, g::sum, g::op_add, g::comparison, g::op_cmp,
        g::logical_not, g::and_expr, g::or_expr, g::conditional, g::kw_and, g::kw_or,
        g::rhs_product, g::rhs_sum, g::rhs_not, g::rhs_and, g::elem_type, g::alias_pattern, g::call_stmt, g::output_suffix>>;

namespace {

// Expressions, bodies and negations nest by recursion, in the parser and in
// every pass over the tree after it: a template nesting 20,000 brackets
// would overflow the stack. The nesting is counted as the rules start and
// refused past the limit.
thread_local int nesting = 0;
thread_local int64_t nesting_limit = 0;

// Every bracket passes an or_expr, every '-' a negated, every 'not' a
// logical_not, every nested statement list a body.
template <typename Rule>
constexpr bool nests = std::is_same_v<g::or_expr, Rule> || std::is_same_v<g::negated, Rule> ||
                       std::is_same_v<g::logical_not, Rule> || std::is_same_v<g::body, Rule>;

// Builds the tree (TreeBuilder) and counts the nesting, around the
// grammar's own control (its error texts).
template <typename Rule>
struct tree_control : grammar_control<Rule> {
  static constexpr bool node = selector<Rule>::value;
  // A rule with no node anywhere under it has nothing to cut back.
  static constexpr bool leaf = !node && pt::internal::is_leaf<8, typename Rule::subs_t, selector>;
  // PEGTL's combinators (seq, opt, ...) call no control; one with nodes
  // under it must, to cut back what it made when it fails: in
  // `opt<state_mark, ws, at<name_chars>>` a `state` that names the input
  // itself is not a mark.
  static constexpr bool enable = grammar_control<Rule>::enable || !leaf;

  template <typename ParseInput, typename... States>
  static void start(const ParseInput& in, TreeBuilder& tree, States&&... st) {
    if constexpr (nests<Rule>)
      if (++nesting > nesting_limit)
        throw tao::pegtl::parse_error(over_limit("template_depth", "", "nesting", nesting).message, in);
    if constexpr (node) tree.start_node(in, tao::pegtl::demangle<Rule>());
    else if constexpr (!leaf) tree.marks.push_back(tree.nodes.size());
    grammar_control<Rule>::start(in, tree, st...);
  }
  template <typename ParseInput, typename... States>
  static void success(const ParseInput& in, TreeBuilder& tree, States&&... st) {
    if constexpr (nests<Rule>) --nesting;
    if constexpr (node) tree.end_node(in.current());
    else if constexpr (!leaf) tree.marks.pop_back();
    grammar_control<Rule>::success(in, tree, st...);
  }
  // What a rule made before it failed goes with it (an alternative tried).
  template <typename ParseInput, typename... States>
  static void failure(const ParseInput& in, TreeBuilder& tree, States&&... st) {
    if constexpr (nests<Rule>) --nesting;
    if constexpr (node) {
      tree.drop_node();
    } else if constexpr (!leaf) {
      tree.nodes.resize(tree.marks.back());
      tree.marks.pop_back();
    }
    grammar_control<Rule>::failure(in, tree, st...);
  }
};

// The file being built, so every location records which one it is in (a
// template and its imports share one list of files).
thread_local int building_file = 0;

Loc loc_of(const Node& n) { return {int(n.m_begin.line), int(n.m_begin.column), building_file}; }

template <typename R>
bool is(const Node& n) { return n.is_type<R>(); }

template <typename R>
const Node* child(const Node& n) {
  for (auto& c : n.children)
    if (c->is_type<R>()) return c;
  return nullptr;
}

ExprPtr build_expr(const Node& n);

// A weight name's index (layers.3): digits the grammar matched, refused when
// they do not fit (std::stoll would throw).
long long whole_number(const Node& n) {
  const std::string s = n.string();
  if (s.size() > 15) throw tao::pegtl::parse_error("the index " + s.substr(0, 32) + " is too large", n.begin());
  return std::stoll(s);
}

std::vector<PathSeg> build_segments(const Node& n) {
  // Children: identifier, then path_index / path_member / path_expr / pattern_var.
  std::vector<PathSeg> segs;
  for (auto& c : n.children) {
    PathSeg s;
    if (is<g::identifier>(*c) || is<g::path_member>(*c)) {
      s.kind = PathSeg::Name;
      s.name = c->string();
    } else if (is<g::path_index>(*c)) {
      s.kind = PathSeg::Index;
      s.index = whole_number(*c);
    } else if (is<g::path_expr>(*c)) {
      s.kind = PathSeg::Interp;
      s.expr = build_expr(*c->children.at(0));
    } else if (is<g::pattern_var>(*c)) {
      s.kind = PathSeg::Interp;
      s.name = c->children.at(0)->string();
    } else if (is<g::pattern_any>(*c)) {
      s.kind = PathSeg::Any;
    } else {
      continue;
    }
    segs.push_back(std::move(s));
  }
  return segs;
}

std::shared_ptr<Expr> make(Expr::Kind k, const Node& n) {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  e->loc = loc_of(n);
  return e;
}

// A left-associative chain: operand (op operand)*. Its tree is as deep as
// the chain is long, so a long chain counts as nesting (a 1 MB line of
// a + a + ... would otherwise overflow the stack when evaluated).
ExprPtr build_chain(const Node& n) {
  if (n.children.size() == 1) return build_expr(*n.children[0]);
  if (int64_t(n.children.size() / 2) > limit("template_depth"))
    throw tao::pegtl::parse_error(
        over_limit("template_depth", "", "operators in one chain", int64_t(n.children.size() / 2)).message,
        n.begin());
  ExprPtr lhs = build_expr(*n.children[0]);
  for (size_t i = 1; i + 1 < n.children.size(); i += 2) {
    auto e = make(Expr::Binary, *n.children[i]);
    e->text = n.children[i]->string();
    e->args = {lhs, build_expr(*n.children[i + 1])};
    lhs = e;
  }
  return lhs;
}

ExprPtr build_expr(const Node& n) {
  if (is<g::number>(n)) {
    auto e = make(Expr::Number, n);
    std::string s = n.string();
    e->is_int = s.find_first_of(".eE") == std::string::npos;
    e->number = std::strtod(s.c_str(), nullptr);
    if (!std::isfinite(e->number) || (e->is_int && std::fabs(e->number) > 9007199254740992.0))
      throw tao::pegtl::parse_error("the number " + s.substr(0, 32) + (s.size() > 32 ? "..." : "") + " is too large" + (e->is_int ? " for an int" : ""), n.begin());
    return e;
  }
  if (is<g::string_body>(n)) {
    auto e = make(Expr::String, n);
    e->loc.col -= 1;  // point at the opening quote
    e->text = n.string();
    return e;
  }
  if (is<g::kw_true>(n) || is<g::kw_false>(n)) {
    auto e = make(Expr::Bool, n);
    e->boolean = is<g::kw_true>(n);
    return e;
  }
  if (is<g::kw_null>(n)) return make(Expr::Null, n);
  if (is<g::list_lit>(n) || is<g::weight_shape>(n) || is<g::input_shape>(n)) {
    auto e = make(Expr::List, n);
    for (auto& c : n.children) e->args.push_back(build_expr(*c));
    return e;
  }
  if (is<g::path>(n)) {
    auto e = make(Expr::Path, n);
    e->path = build_segments(n);
    return e;
  }
  if (is<g::call>(n) || is<g::call_stmt>(n)) {
    auto e = make(Expr::Call, n);
    for (auto& c : n.children) {
      if (is<g::callee>(*c)) e->text = c->string();
      else if (is<g::kwarg>(*c)) {
        e->kwargs.emplace_back(c->children.at(0)->string(), build_expr(*c->children.at(1)));
        e->kwarg_locs.push_back(loc_of(*c));
      } else e->args.push_back(build_expr(*c));
    }
    return e;
  }
  if (is<g::postfix>(n)) {
    ExprPtr cur = build_expr(*n.children.at(0));
    for (size_t i = 1; i < n.children.size(); ++i) {
      const Node& p = *n.children[i];
      auto e = make(is<g::transpose>(p) ? Expr::Transpose : Expr::Index, p);
      e->args.push_back(cur);
      if (is<g::index>(p)) e->args.push_back(build_expr(*p.children.at(0)));
      cur = e;
    }
    return cur;
  }
  if (is<g::negated>(n)) {
    auto e = make(Expr::Unary, n);
    e->text = "-";
    e->args.push_back(build_expr(*n.children.at(0)));
    return e;
  }
  if (is<g::logical_not>(n)) {
    auto e = make(Expr::Unary, n);
    e->text = "not";
    e->args.push_back(build_expr(*n.children.at(0)));
    return e;
  }
  if (is<g::product>(n) || is<g::sum>(n) || is<g::comparison>(n) || is<g::and_expr>(n) ||
      is<g::or_expr>(n) || is<g::rhs_product>(n) || is<g::rhs_sum>(n) || is<g::rhs_and>(n))
    return build_chain(n);
  if (is<g::conditional>(n)) {
    auto e = make(Expr::Cond, n);
    for (auto& c : n.children) e->args.push_back(build_expr(*c));
    return e;
  }
  // A node with exactly one child stands for it (selected wrappers).
  if (n.children.size() == 1) return build_expr(*n.children[0]);
  auto e = make(Expr::Null, n);
  return e;
}

Body build_body(const Node& n);

Stmt build_stmt(const Node& n) {
  Stmt s;
  s.loc = loc_of(n);
  if (is<g::assign>(n)) {
    s.kind = Stmt::Assign;
    for (size_t k = 0; k + 1 < n.children.size(); ++k) s.names.push_back(n.children[k]->string());
    s.name = s.names.at(0);
    s.value = build_expr(*n.children.back());
  } else if (is<g::output_stmt>(n)) {
    s.kind = Stmt::Output;
    for (auto& c : n.children) {
      if (is<g::output_name>(*c)) s.name = c->string();
      else if (is<g::output_suffix>(*c)) s.suffix = build_expr(*c->children.at(0));
      else if (is<g::index>(*c)) s.index = build_expr(*c->children.at(0));
      else s.value = build_expr(*c);
    }
  } else if (is<g::call_stmt>(n)) {
    s.kind = Stmt::Call;
    s.value = build_expr(n);
  } else if (is<g::return_stmt>(n)) {
    s.kind = Stmt::Return;
    s.value = build_expr(*n.children.at(0));
  } else if (is<g::if_stmt>(n)) {
    s.kind = Stmt::If;
    s.value = build_expr(*n.children.at(0));
    s.body = build_body(*n.children.at(1));
    if (n.children.size() > 2) {
      const Node& e = *n.children[2];
      if (is<g::if_stmt>(e)) s.else_body.push_back(build_stmt(e));
      else s.else_body = build_body(e);
    }
  } else if (is<g::for_stmt>(n)) {
    s.kind = Stmt::For;
    std::vector<const Node*> exprs;
    for (auto& c : n.children) {
      if (is<g::loop_var>(*c)) s.name = c->string();
      else if (is<g::scope_name>(*c)) s.scope = c->string();
      else if (is<g::body>(*c)) s.body = build_body(*c);
      else exprs.push_back(c);
    }
    s.value = build_expr(*exprs.at(0));
    s.end = build_expr(*exprs.at(1));
  }
  return s;
}

Body build_body(const Node& n) {
  Body b;
  for (auto& c : n.children) b.push_back(build_stmt(*c));
  return b;
}

TypeRef build_type(const Node& n) {
  TypeRef t;
  if (is<g::list_type>(n)) {
    t.list = true;
    t.elem = n.children.at(0)->string();
  } else {
    t.elem = n.string();
  }
  return t;
}

WeightDecl build_weight(const Node& n) {
  WeightDecl w;
  w.loc = loc_of(n);
  w.alias = is<g::alias_decl>(n);
  for (auto& c : n.children) {
    if (is<g::optional_mark>(*c)) w.optional = true;
    else if (is<g::weight_pattern>(*c) || is<g::alias_pattern>(*c)) w.pattern = build_segments(*c);
    else if (is<g::alias_target>(*c)) w.target = build_segments(*c);
    else if (is<g::weight_shape>(*c)) {
      if (!c->children.empty() && is<g::checkpoint_shape>(*c->children.at(0))) w.shape_from_checkpoint = true;
      else
        for (auto& d : c->children.at(0)->children) w.shape.push_back(build_expr(*d));
    } else if (is<g::weight_cond>(*c)) w.condition = build_expr(*c->children.at(0));
  }
  if (!w.loc.line && !w.pattern.empty()) w.loc = loc_of(*n.children.at(0));
  return w;
}

Template build_template(const Node& root) {
  Template t;
  for (auto& item : root.children) {
    const Node& n = *item;
    if (is<g::family_name>(n)) {
      t.family = n.string();
      t.family_loc = loc_of(n);
    } else if (is<g::import_path>(n)) {
      t.imports.emplace_back(n.children.at(0)->string(), loc_of(n));
    } else if (is<g::import_space>(n)) {
      // The import just read is a namespace's, not merged.
      Namespace ns;
      ns.file = t.imports.back().first;
      ns.loc = t.imports.back().second;
      ns.name = n.string();
      t.imports.pop_back();
      t.spaces.push_back(std::move(ns));
    } else if (is<g::import_config>(n)) {
      t.spaces.back().config_field = n.string();
    } else if (is<g::import_weights>(n)) {
      for (const auto& seg : build_segments(n))
        t.spaces.back().weight_prefix.push_back(seg.kind == PathSeg::Index ? std::to_string(seg.index) : seg.name);
    } else if (is<g::config_field>(n)) {
      ConfigField f;
      f.loc = loc_of(n);
      f.name = n.children.at(0)->string();
      f.type = build_type(*n.children.at(1));
      if (n.children.size() > 2) f.default_value = build_expr(*n.children[2]->children.at(0));
      t.config.push_back(std::move(f));
    } else if (is<g::flag_decl>(n)) {
      t.flags.push_back({n.children.at(0)->string(), build_expr(*n.children.at(1)), loc_of(n)});
    } else if (is<g::weight_decl>(n) || is<g::alias_decl>(n)) {
      t.weights.push_back(build_weight(n));
    } else if (is<g::unread_decl>(n)) {
      UnreadDecl u;
      u.loc = loc_of(n);
      u.pattern = build_segments(*n.children.at(0));
      u.reason = n.children.at(1)->children.at(0)->string();
      t.unread.push_back(std::move(u));
    } else if (is<g::block_def>(n)) {
      BlockDef b;
      b.loc = loc_of(n);
      for (auto& c : n.children) {
        if (is<g::block_name>(*c)) b.name = c->string();
        else if (is<g::param_name>(*c)) b.params.push_back(c->string());
        else if (is<g::body>(*c)) b.body = build_body(*c);
      }
      t.blocks.push_back(std::move(b));
    } else if (is<g::graph_def>(n)) {
      GraphDef gd;
      gd.loc = loc_of(n);
      for (auto& c : n.children) {
        if (is<g::graph_name>(*c)) gd.name = c->string();
        else if (is<g::graph_input>(*c)) {
          GraphInput in;
          in.loc = loc_of(*c);
          size_t k = 0;
          if (is<g::state_mark>(*c->children.at(0))) in.held = true, k = 1;
          in.name = c->children.at(k)->string();
          in.dtype = c->children.at(k + 1)->string();
          for (auto& d : c->children.at(k + 2)->children) in.shape.push_back(build_expr(*d));
          if (c->children.size() > k + 3) in.default_value = build_expr(*c->children.at(k + 3)->children.at(0));
          gd.inputs.push_back(std::move(in));
        } else if (is<g::body>(*c)) gd.body = build_body(*c);
      }
      t.graphs.push_back(std::move(gd));
    }
  }
  return t;
}

}  // namespace

std::vector<std::string> bare_dim_names(const GraphInput& in) {
  std::vector<std::string> out;
  for (const auto& d : in.shape)
    if (d->kind == Expr::Path && d->path.size() == 1 && d->path[0].kind == PathSeg::Name) out.push_back(d->path[0].name);
  return out;
}

const Namespace* find_space(const Template& t, const std::string& name) {
  for (const auto& ns : t.spaces)
    if (ns.name == name) return &ns;
  return nullptr;
}

std::vector<UnreadDecl> all_unread(const Template& t) {
  std::vector<UnreadDecl> out = t.unread;
  for (const auto& ns : t.spaces) {
    if (!ns.t) continue;
    for (UnreadDecl u : all_unread(*ns.t)) {
      std::vector<PathSeg> prefix;
      for (const auto& seg : ns.weight_prefix) prefix.push_back(PathSeg{PathSeg::Name, seg, 0, nullptr});
      u.pattern.insert(u.pattern.begin(), prefix.begin(), prefix.end());
      out.push_back(std::move(u));
    }
  }
  return out;
}

std::string path_str(const std::vector<PathSeg>& p) {
  std::string s;
  for (size_t i = 0; i < p.size(); ++i) {
    if (i) s += ".";
    if (p[i].kind == PathSeg::Name) s += p[i].name;
    else if (p[i].kind == PathSeg::Index) s += std::to_string(p[i].index);
    else s += "{" + (p[i].name.empty() ? std::string("...") : p[i].name) + "}";
  }
  return s;
}

bool unread_matches(const UnreadDecl& u, const std::string& tensor) {
  size_t at = 0;
  for (const PathSeg& s : u.pattern) {
    if (at > tensor.size()) return false;
    const size_t dot = std::min(tensor.find('.', at), tensor.size());
    const std::string seg = tensor.substr(at, dot - at);
    if (s.kind == PathSeg::Name && s.name != seg) return false;
    if (s.kind == PathSeg::Index && std::to_string(s.index) != seg) return false;
    if (s.kind == PathSeg::Interp && (seg.empty() || seg.find_first_not_of("0123456789") != std::string::npos))
      return false;
    at = dot + 1;
  }
  return true;
}

namespace {

// A graph or a block defined twice in one file would have one silently
// shadow the other: refused, naming both. (Config fields and flags declared
// twice are check_template's.)
template <class T>
Status none_twice(const std::vector<T>& defs, const char* kind, const SourceRef& src) {
  std::map<std::string, Loc> seen;
  for (const auto& d : defs) {
    auto [first, fresh] = seen.emplace(d.name, d.loc);
    if (!fresh)
      return diag(src, d.loc, std::string(kind) + " '" + d.name + "' is defined twice (first at " + src.path + ":" +
                                  std::to_string(first->second.line) + ":" + std::to_string(first->second.col) + ")");
  }
  return {};
}

Result<Template> parse_one(const std::string& path, std::shared_ptr<const std::string> text, int file) {
  SourceRef src{path, text.get()};
  if (auto st = check_limit("template_bytes", int64_t(text->size()), path, "the template's size in bytes"); !st)
    return st.error();
  tao::pegtl::memory_input in(text->data(), text->size(), path);
  try {
    nesting = 0;
    nesting_limit = limit("template_depth");
    // One per thread, kept: its lists keep their size from one parse to
    // the next (imports are parsed one after another, never nested).
    static thread_local TreeBuilder tree;
    tree.reset();
    if (!tao::pegtl::parse<g::file, tao::pegtl::nothing, tree_control>(in, tree))
      return diag(src, {1, 1}, "not a template: a template starts with 'family NAME'");
    const Node& root = tree.tree();
    building_file = file;
    Template t = build_template(root);
    building_file = 0;
    t.path = path;
    t.source = text;
    ARCH_TRY_STATUS(none_twice(t.graphs, "graph", src));
    ARCH_TRY_STATUS(none_twice(t.blocks, "block", src));
    return t;
  } catch (const tao::pegtl::parse_error& e) {
    const auto& pos = e.positions().front();
    return diag(src, {int(pos.line), int(pos.column)}, std::string(e.message()));
  }
}

// `base` under `t`: what t defines by the same name replaces base's, in
// base's place (config fields, flags, blocks, graphs); t's weight
// declarations are matched before base's.
template <class T>
void merge_named(std::vector<T>& mine, const std::vector<T>& base) {
  std::vector<T> out;
  for (const auto& b : base) {
    auto it = std::find_if(mine.begin(), mine.end(), [&](const T& m) { return m.name == b.name; });
    out.push_back(it == mine.end() ? b : *it);
  }
  for (const auto& m : mine)
    if (std::none_of(base.begin(), base.end(), [&](const T& b) { return b.name == m.name; })) out.push_back(m);
  mine = std::move(out);
}

void merge(Template& t, const Template& base) {
  merge_named(t.config, base.config);
  merge_named(t.flags, base.flags);
  merge_named(t.blocks, base.blocks);
  merge_named(t.graphs, base.graphs);
  t.weights.insert(t.weights.end(), base.weights.begin(), base.weights.end());
  t.unread.insert(t.unread.end(), base.unread.begin(), base.unread.end());
  for (const auto& ns : base.spaces)
    if (!find_space(t, ns.name)) t.spaces.push_back(ns);
}

struct Loader {
  std::vector<SourceFile> files;
  std::vector<std::string> loading;  // canonical paths on the import stack

  // "b.arch:5:1", for messages naming a definition in any loaded file.
  std::string place(Loc loc) const {
    return files.at(size_t(loc.file)).path + ":" + std::to_string(loc.line) + ":" + std::to_string(loc.col);
  }
  // One definition read twice (a diamond: b and c both import common.arch)
  // is the same place under two file indices.
  bool same_place(Loc a, Loc b) const {
    std::error_code ec;
    return a.line == b.line && a.col == b.col &&
           std::filesystem::weakly_canonical(files.at(size_t(a.file)).path, ec) ==
               std::filesystem::weakly_canonical(files.at(size_t(b.file)).path, ec);
  }

  // Two imports of `t` defining the same graph, block, config field or
  // flag: merging would keep the first import's silently. `t` choosing
  // (defining it itself, in `own`) is the documented way to extend a family
  // and stays allowed.
  template <class T>
  Status not_from_two_imports(const char* kind, const std::vector<T>& merged, const std::vector<T>& base,
                              const std::set<std::string>& own, const Template& t, Loc import_loc) const {
    for (const auto& b : base) {
      if (own.count(b.name)) continue;
      for (const auto& earlier : merged)
        if (earlier.name == b.name && !same_place(earlier.loc, b.loc))
          return diag(t, import_loc, std::string(kind) + " '" + b.name + "' is defined twice: at " + place(b.loc) +
                                         " (imported here) and at " + place(earlier.loc) +
                                         " (imported before); define it in " + t.path + " to choose one");
    }
    return {};
  }
  template <class T>
  static std::set<std::string> names_of(const std::vector<T>& defs) {
    std::set<std::string> out;
    for (const auto& d : defs) out.insert(d.name);
    return out;
  }

  Result<Template> load(const std::string& path, const Template* importer, Loc from) {
    // Each import is a level of recursion here and in the parser below it:
    // a chain thousands of files deep would overflow the stack.
    if (importer && int64_t(loading.size()) > limit("template_depth"))
      return diag(*importer, from,
                  over_limit("template_depth", "", "the nesting of imports", int64_t(loading.size())).message);
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      if (importer) return diag(*importer, from, "cannot open the imported template " + path);
      return error(path + ": error: cannot open the template file");
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::error_code ec;
    std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
    if (std::find(loading.begin(), loading.end(), canonical) != loading.end())
      return diag(*importer, from, "import cycle: " + path + " imports itself");
    auto text = std::make_shared<const std::string>(ss.str());
    int index = int(files.size());
    files.push_back({path, text});
    ARCH_TRY(Template t, parse_one(path, text, index));
    t.files = files;  // so diagnostics in the imports below can name this file
    loading.push_back(canonical);
    auto imports = std::move(t.imports);
    t.imports.clear();
    const auto own_config = names_of(t.config), own_flags = names_of(t.flags), own_blocks = names_of(t.blocks),
               own_graphs = names_of(t.graphs);
    for (auto& ns : t.spaces) {
      std::string p = (std::filesystem::path(path).parent_path() / ns.file).string();
      for (const auto& f : t.config)
        if (f.name == ns.name)
          return diag(t, ns.loc, "the namespace '" + ns.name + "' has the name of a config field (" + place(f.loc) + ")");
      if (std::count_if(t.spaces.begin(), t.spaces.end(), [&](const Namespace& o) { return o.name == ns.name; }) > 1)
        return diag(t, ns.loc, "two imports take the namespace '" + ns.name + "'");
      ARCH_TRY(Template inner, load(p, &t, ns.loc));
      ns.t = std::make_shared<Template>(std::move(inner));
    }
    for (const auto& [file, loc] : imports) {
      std::string p = (std::filesystem::path(path).parent_path() / file).string();
      ARCH_TRY(Template base, load(p, &t, loc));
      ARCH_TRY_STATUS(not_from_two_imports("config field", t.config, base.config, own_config, t, loc));
      ARCH_TRY_STATUS(not_from_two_imports("flag", t.flags, base.flags, own_flags, t, loc));
      ARCH_TRY_STATUS(not_from_two_imports("block", t.blocks, base.blocks, own_blocks, t, loc));
      ARCH_TRY_STATUS(not_from_two_imports("graph", t.graphs, base.graphs, own_graphs, t, loc));
      merge(t, base);
    }
    loading.pop_back();
    return t;
  }
};

}  // namespace

Result<Template> parse_template(const std::string& path, std::string source) {
  auto text = std::make_shared<const std::string>(std::move(source));
  ARCH_TRY(Template t, parse_one(path, text, 0));
  t.files = {{path, text}};
  return t;
}

Result<Template> parse_template_file(const std::string& path) {
  Loader loader;
  ARCH_TRY(Template t, loader.load(path, nullptr, {}));
  // Every template read shares the one list of files its locations index.
  std::function<void(Template&)> share_files = [&](Template& x) {
    x.files = loader.files;
    for (auto& ns : x.spaces) share_files(*ns.t);
  };
  share_files(t);
  return t;
}

}  // namespace arch::dsl

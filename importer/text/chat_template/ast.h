// The syntax tree of a chat template: expressions and statements as the
// parser builds them and the interpreter walks them. Every node keeps the
// position of the token it is reported at.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "importer/text/chat_template/lexer.h"
#include "importer/text/chat_template/value.h"

namespace arch::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // literal
    Name,      // name
    List,      // args = items
    Tuple,     // args = items
    Dict,      // args = key0, value0, key1, value1, ...
    GetAttr,   // args[0] . name
    GetItem,   // args[0] [ args[1] ]
    Slice,     // args[0] [ args[1] : args[2] : args[3] ] (null = omitted)
    Call,      // args[0] ( args[1..], kwargs, *dyn_args, **dyn_kwargs )
    Filter,    // args[0] | name ( args[1..], kwargs ); args[0] null in filter blocks
    Test,      // args[0] is name ( args[1..], kwargs )
    Not,       // not args[0]
    Neg,       // - args[0]
    Pos,       // + args[0]
    Binary,    // args[0] op args[1]: + - * / // % ** ~ and or
    Compare,   // args[0] ops[0] args[1] ops[1] args[2] ...: == != < <= > >= in notin
    CondExpr,  // args[0] if args[1] else args[2] (args[2] null: no else)
  };
  Kind kind;
  Pos pos;
  Value literal;
  std::string name;              // Name, GetAttr attribute, Filter/Test name, Binary op
  std::vector<std::string> ops;  // Compare
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  ExprPtr dyn_args, dyn_kwargs;
  int depth = 1;  // height of this subtree (the parser bounds it)

  Expr(Kind k, Pos p) : kind(k), pos(p) {}
};

// What `for` and `set` assign to: a name, a tuple of names, or ns.attr.
struct Target {
  enum class Kind { Name, Tuple, NamespaceAttr };
  Kind kind = Kind::Name;
  Pos pos;
  std::vector<std::string> names;  // Name: 1; Tuple: n; NamespaceAttr: the namespace
  std::string attr;                // NamespaceAttr
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,         // text
    Print,        // exprs: {{ a }} or {% print a, b %}
    If,           // branches (cond, body) for if/elif; else_body
    For,          // target in expr [if cond]: body; else_body
    Set,          // target = expr
    SetBlock,     // target [| filters] = rendered body
    Macro,        // name(params): body
    FilterBlock,  // filters applied to the rendered body
    With,         // assigns; body in a new scope
    Break,
    Continue,
    Generation,   // transformers' {% generation %}: the body, rendered as is
  };
  Kind kind;
  Pos pos;
  std::string text;
  std::vector<ExprPtr> exprs;
  std::vector<std::pair<ExprPtr, Body>> branches;
  Target target;
  ExprPtr expr, cond;
  Body body, else_body;
  std::string name;
  std::vector<std::pair<std::string, ExprPtr>> params;  // default null: required
  std::vector<ExprPtr> filters;                           // Filter exprs with null operand
  std::vector<std::pair<Target, ExprPtr>> assigns;

  Stmt(Kind k, Pos p) : kind(k), pos(p) {}
};

}  // namespace arch::jinja

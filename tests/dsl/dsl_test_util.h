// Helpers the dsl tests share: parse a template from text, print an
// expression as an s-expression, split a diagnostic into its lines.
#pragma once

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/parse.h"

namespace arch::dsl::testing {

// Parses `src` as "t.arch"; fails the test (and returns an empty template)
// when it does not parse.
inline Template parse_ok(const std::string& src) {
  auto t = parse_template("t.arch", src);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : Template{};
}

// The parse error's full text; "" (and a test failure) when it parses.
inline std::string parse_error(const std::string& src) {
  auto t = parse_template("t.arch", src);
  EXPECT_FALSE(t.ok()) << "parsed, but an error was expected:\n" << src;
  return t.ok() ? "" : t.error().message;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

inline std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

// The 1-based column the caret line of a diagnostic points at (the source
// and caret lines are indented by four spaces); -1 without a caret line.
inline int caret_column(const std::string& diagnostic) {
  auto l = lines_of(diagnostic);
  if (l.size() < 3 || l[2].find('^') == std::string::npos) return -1;
  return int(l[2].find('^')) - 4 + 1;
}

// An expression as an s-expression: (+ a (* b c)), (^T W), (call f x k=v).
inline std::string sexpr(const Expr& e) {
  auto path = [](const std::vector<PathSeg>& p) {
    std::string s;
    for (size_t k = 0; k < p.size(); ++k) {
      if (k) s += ".";
      if (p[k].kind == PathSeg::Name) s += p[k].name;
      else if (p[k].kind == PathSeg::Index) s += std::to_string(p[k].index);
      else s += "{" + (p[k].expr ? sexpr(*p[k].expr) : p[k].name) + "}";
    }
    return s;
  };
  std::ostringstream o;
  switch (e.kind) {
    case Expr::Number:
      if (e.is_int) o << (long long)e.number;
      else o << e.number << "f";
      break;
    case Expr::String: o << '"' << e.text << '"'; break;
    case Expr::Bool: o << (e.boolean ? "true" : "false"); break;
    case Expr::Null: o << "null"; break;
    case Expr::List:
      o << "[";
      for (size_t k = 0; k < e.args.size(); ++k) o << (k ? " " : "") << sexpr(*e.args[k]);
      o << "]";
      break;
    case Expr::Path: o << path(e.path); break;
    case Expr::Call:
      o << "(call " << e.text;
      for (auto& a : e.args) o << " " << sexpr(*a);
      for (auto& [k, v] : e.kwargs) o << " " << k << "=" << sexpr(*v);
      o << ")";
      break;
    case Expr::Binary:
    case Expr::Unary:
      o << "(" << e.text;
      for (auto& a : e.args) o << " " << sexpr(*a);
      o << ")";
      break;
    case Expr::Transpose: o << "(^T " << sexpr(*e.args[0]) << ")"; break;
    case Expr::Index: o << "(index " << sexpr(*e.args[0]) << " " << sexpr(*e.args[1]) << ")"; break;
    case Expr::Cond:
      o << "(if " << sexpr(*e.args[0]) << " " << sexpr(*e.args[1]) << " " << sexpr(*e.args[2]) << ")";
      break;
  }
  return o.str();
}

}  // namespace arch::dsl::testing

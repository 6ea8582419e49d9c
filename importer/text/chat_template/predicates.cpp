#include "importer/text/chat_template/predicates.h"

#include <map>

#include "importer/text/chat_template/filters.h"
#include "importer/text/chat_template/operators.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

using TestFn = Result<bool> (*)(const Value& v, const CallArgs& a, const std::string& what);

Result<bool> no_arg(const CallArgs& a, const std::string& what) {
  ARCH_TRY(auto v, bind_args(what, a, {}));
  return true;
}

Result<Value> one_arg(const CallArgs& a, const std::string& what, const char* name) {
  ARCH_TRY(auto v, bind_args(what, a, {{name, std::nullopt}}));
  return v[0];
}

template <bool (*P)(const Value&)>
Result<bool> simple(const Value& v, const CallArgs& a, const std::string& what) {
  ARCH_TRY_STATUS(no_arg(a, what));
  return P(v);
}

template <const char* Op>
Result<bool> comparison(const Value& v, const CallArgs& a, const std::string& what) {
  ARCH_TRY(Value other, one_arg(a, what, "other"));
  return compare_op(Op, v, other);
}

Result<bool> parity(const Value& v, const CallArgs& a, const std::string& what, int64_t want) {
  ARCH_TRY_STATUS(no_arg(a, what));
  ARCH_TRY(Value r, binary_op("%", v, Value::integer(2)));
  return equals(r, Value::integer(want));
}

constexpr char kEq[] = "==", kNe[] = "!=", kGt[] = ">", kGe[] = ">=", kLt[] = "<", kLe[] = "<=";

bool is_defined(const Value& v) { return !v.is_undefined(); }
bool is_undefined(const Value& v) { return v.is_undefined(); }
bool is_none(const Value& v) { return v.is_none(); }
bool is_boolean(const Value& v) { return v.is_bool(); }
bool is_true(const Value& v) { return v.is_bool() && v.as_bool(); }
bool is_false(const Value& v) { return v.is_bool() && !v.as_bool(); }
bool is_integer(const Value& v) { return v.is_int(); }
bool is_float(const Value& v) { return v.is_float(); }
bool is_number(const Value& v) { return v.is_number(); }
bool is_string(const Value& v) { return v.is_string(); }
bool is_mapping(const Value& v) { return v.is_dict(); }
bool is_iterable(const Value& v) {
  return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict() || v.is_iterator() ||
         (v.is_object() && v.object().type_name() == "LoopContext");
}
// len() and __getitem__: jinja2's Undefined has both.
bool is_sequence(const Value& v) { return v.is_undefined() || v.is_string() || v.is_list() || v.is_dict(); }
// Undefined and the loop object define __call__.
bool is_callable(const Value& v) {
  return v.is_function() || v.is_undefined() || (v.is_object() && v.object().type_name() == "LoopContext");
}
// jinja2 reads str(v); a string is read where it is.
template <bool (*P)(std::string_view)>
Result<bool> printed(const Value& v, const CallArgs& a, const std::string& what) {
  ARCH_TRY_STATUS(no_arg(a, what));
  if (v.is_string()) return P(v.as_string());
  ARCH_TRY(std::string s, to_str(v));
  return P(s);
}
bool is_escaped(const Value&) { return false; }

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> t = {
      {"defined", simple<is_defined>},
      {"undefined", simple<is_undefined>},
      {"none", simple<is_none>},
      {"boolean", simple<is_boolean>},
      {"true", simple<is_true>},
      {"false", simple<is_false>},
      {"integer", simple<is_integer>},
      {"float", simple<is_float>},
      {"number", simple<is_number>},
      {"string", simple<is_string>},
      {"mapping", simple<is_mapping>},
      {"iterable", simple<is_iterable>},
      {"sequence", simple<is_sequence>},
      {"callable", simple<is_callable>},
      {"lower", printed<py_islower>},
      {"upper", printed<py_isupper>},
      {"escaped", simple<is_escaped>},
      {"odd", [](const Value& v, const CallArgs& a, const std::string& w) { return parity(v, a, w, 1); }},
      {"even", [](const Value& v, const CallArgs& a, const std::string& w) { return parity(v, a, w, 0); }},
      {"divisibleby",
       [](const Value& v, const CallArgs& a, const std::string& w) -> Result<bool> {
         ARCH_TRY(Value num, one_arg(a, w, "num"));
         ARCH_TRY(Value r, binary_op("%", v, num));
         return equals(r, Value::integer(0));
       }},
      {"eq", comparison<kEq>},
      {"equalto", comparison<kEq>},
      {"==", comparison<kEq>},
      {"ne", comparison<kNe>},
      {"!=", comparison<kNe>},
      {"gt", comparison<kGt>},
      {"greaterthan", comparison<kGt>},
      {">", comparison<kGt>},
      {"ge", comparison<kGe>},
      {">=", comparison<kGe>},
      {"lt", comparison<kLt>},
      {"lessthan", comparison<kLt>},
      {"<", comparison<kLt>},
      {"le", comparison<kLe>},
      {"<=", comparison<kLe>},
      {"in",
       [](const Value& v, const CallArgs& a, const std::string& w) -> Result<bool> {
         ARCH_TRY(Value seq, one_arg(a, w, "seq"));
         return contains(seq, v);
       }},
      {"sameas",
       [](const Value& v, const CallArgs& a, const std::string& w) -> Result<bool> {
         ARCH_TRY(Value other, one_arg(a, w, "other"));
         // Python identity: None, True and False are singletons, small ints are cached.
         if (v.kind() != other.kind()) return false;
         if (v.is_none() || v.is_undefined()) return v.is_none();
         if (v.is_bool()) return v.as_bool() == other.as_bool();
         if (v.is_int()) return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
         return v.identity() != nullptr && v.identity() == other.identity();
       }},
      {"filter",
       [](const Value& v, const CallArgs& a, const std::string& w) -> Result<bool> {
         ARCH_TRY_STATUS(no_arg(a, w));
         return v.is_string() && filter_support(v.as_string()) == Support::Yes;
       }},
      {"test",
       [](const Value& v, const CallArgs& a, const std::string& w) -> Result<bool> {
         ARCH_TRY_STATUS(no_arg(a, w));
         return v.is_string() && test_support(v.as_string()) == Support::Yes;
       }},
  };
  return t;
}

}  // namespace

Support test_support(std::string_view name) {
  return tests().count(name) ? Support::Yes : Support::Unknown;
}

Result<bool> apply_test(const std::string& name, const Value& value, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) return error("unknown test '" + name + "'");
  return it->second(value, args, "test '" + name + "'");
}

}  // namespace arch::jinja

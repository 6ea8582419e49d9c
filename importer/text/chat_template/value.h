// The values a chat template computes with: Python's, as jinja2 sees them.
//
//   undefined   jinja2's default Undefined: falsy, prints as "", iterates as
//               empty; arithmetic, calls, attribute access on it fail with
//               its hint ("'x' is undefined", "'dict object' has no attribute 'y'")
//   none, bool, int (int64; overflow is an error), float, str (UTF-8)
//   list / tuple (one kind, a flag tells them apart; dict views are lists too)
//   dict        insertion-ordered, any value as key (JSON gives strings)
//   iterator    a one-shot iterator, what map/select/reverse/items return in
//               jinja2: always truthy, no len(), consumed by iteration
//   object      namespace(), the loop variable, joiner(): attributes only
//   function    globals, bound methods ('x'.upper), macros
//
// Strings, lists and dicts are shared by reference and never modified after
// they are built (transformers renders in jinja2's immutable sandbox), so
// copying a value is cheap whatever it holds; namespaces are the only
// mutable values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"

namespace arch::jinja {

class Value;

struct ListData {
  std::vector<Value> items;
  bool is_tuple = false;
  // Lists that are other Python types: "dict_keys", "dict_values", "dict_items"
  // (not indexable) and "range" (prints as range(<range_args>)).
  std::string view;
  std::string range_args;
  int depth = 1;  // nesting of lists and dicts inside, this one included
};

struct DictData {
  std::vector<std::pair<Value, Value>> items;
  int depth = 1;
  const Value* find(const Value& key) const;
  void set(Value key, Value value);  // replaces an equal key in place
};

struct IteratorData {
  std::vector<Value> items;
  size_t pos = 0;
  std::string type_name = "generator";
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  // nullopt: no such attribute.
  virtual std::optional<Value> get_attr(const std::string& name) const = 0;
  virtual bool set_attr(const std::string& name, Value value);  // false: read-only
  // Appends how it prints, `level` containers deep; false as soon as that
  // would pass `cap` bytes (see append_repr).
  virtual bool append_repr(std::string& out, int level, size_t cap) const = 0;
  virtual int depth() const { return 1; }
};

struct Function {
  std::string name;  // for messages: "range", "str.split", "macro 'm'"
  std::function<Result<Value>(const CallArgs&)> call;
};

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Iterator, Object, Function };

  Value() : v_(UndefinedT{}) {}
  static Value undefined(std::string hint) { return make<UndefinedT>(UndefinedT{std::move(hint)}); }
  static Value none() { return make<NoneT>(NoneT{}); }
  static Value boolean(bool b) { return make<bool>(b); }
  static Value integer(int64_t i) { return make<int64_t>(i); }
  static Value number(double d) { return make<double>(d); }
  static Value string(std::string s);
  static Value list(std::vector<Value> items, bool tuple = false);
  // A dict view (d.keys(), d.values(), d.items()): a list that cannot be indexed.
  static Value view(std::vector<Value> items, std::string view_name);
  // range(...): a list of ints that prints as "range(<args>)".
  static Value range(std::vector<Value> items, std::string args);
  static Value dict(std::vector<std::pair<Value, Value>> items);
  static Value dict(std::shared_ptr<DictData> d) { return make<std::shared_ptr<DictData>>(std::move(d)); }
  static Value iterator(std::vector<Value> items, std::string type_name = "generator");
  static Value object(std::shared_ptr<jinja::Object> o) {
    return make<std::shared_ptr<jinja::Object>>(std::move(o));
  }
  static Value function(std::string name, std::function<Result<Value>(const CallArgs&)> f);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_number() const { return is_bool() || is_int() || is_float(); }  // Python's numbers.Number
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_tuple() const { return is_list() && list().is_tuple; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_iterator() const { return kind() == Kind::Iterator; }
  bool is_object() const { return kind() == Kind::Object; }
  bool is_function() const { return kind() == Kind::Function; }

  const std::string& undefined_hint() const { return std::get<UndefinedT>(v_).hint; }
  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& as_string() const { return *std::get<std::shared_ptr<const std::string>>(v_); }
  const ListData& list() const { return *std::get<std::shared_ptr<ListData>>(v_); }
  const DictData& dict() const { return *std::get<std::shared_ptr<DictData>>(v_); }
  IteratorData& iter() const { return *std::get<std::shared_ptr<IteratorData>>(v_); }
  jinja::Object& object() const { return *std::get<std::shared_ptr<jinja::Object>>(v_); }
  const Function& function() const { return *std::get<std::shared_ptr<Function>>(v_); }
  // Identity, for `is sameas` and comparing objects.
  const void* identity() const;

  // int or bool as int64; float as double (for arithmetic on numbers).
  double to_double() const;

 private:
  struct UndefinedT { std::string hint; };
  struct NoneT {};
  using Data = std::variant<UndefinedT, NoneT, bool, int64_t, double, std::shared_ptr<const std::string>,
                            std::shared_ptr<ListData>, std::shared_ptr<DictData>,
                            std::shared_ptr<IteratorData>, std::shared_ptr<jinja::Object>,
                            std::shared_ptr<Function>>;
  template <class T, class A>
  static Value make(A&& a) {
    Value v;
    v.v_.template emplace<T>(std::forward<A>(a));
    return v;
  }
  Data v_;
};

// How deeply lists, dicts and namespaces nest in v (0 for scalars). The
// interpreter refuses to store values nested deeper than the limit
// chat_depth, so printing, comparing and freeing them cannot exhaust the
// stack.
int value_depth(const Value& v);
// Printing stops here whatever the limit: a namespace may contain itself.
constexpr int kMaxValueDepth = 400;

// Python truthiness; undefined is false, iterators and objects are true.
bool truthy(const Value& v);
// str(v): what {{ v }} prints. A list can print far larger than it is (the
// same long string many times): past chat_text_bytes it is an error.
Result<std::string> to_str(const Value& v);
// repr(v): how values print inside lists and dicts; bounded the same way.
Result<std::string> repr(const Value& v);
// repr of a value printed `level` containers deep, appended to out; past
// kMaxValueDepth levels it is "..." (a namespace may contain itself). False,
// with out left incomplete, as soon as out would pass `cap` bytes.
bool append_repr(std::string& out, const Value& v, int level, size_t cap);
// Python's type name: "str", "int", "NoneType", "list", "dict", ...
std::string type_name(const Value& v);
// jinja2's object_type_repr, quoted: "'dict object'", "'None'".
std::string object_description(const Value& v);
// Python ==.
bool equals(const Value& a, const Value& b);
// Python <: -1 / 0 / 1, or a TypeError message for values that do not order.
Result<int> compare(const Value& a, const Value& b);
// Whether Python can hash it (be a dict key, a set member): not lists,
// dicts or dict views.
bool hashable(const Value& v);
// iter(v) drained: characters of a str, keys of a dict, the rest of an
// iterator (consuming it); undefined iterates as empty. The characters of a
// long string are refused past chat_text_bytes (kItemBytes each).
Result<std::vector<Value>> iterate(const Value& v);
// len(v)
Result<int64_t> length(const Value& v);

// The error jinja2 raises when an undefined value is used.
Error undefined_error(const Value& v);

// JSON to values; ordered_json keeps key order (Python dicts do). Nesting
// deeper than the limit chat_depth is an error.
Result<Value> from_json(const nlohmann::json& j);
Result<Value> from_json(const nlohmann::ordered_json& j);

}  // namespace arch::jinja

#include "importer/text/chat_template/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

const Value* DictData::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equals(k, key)) return &v;
  return nullptr;
}

void DictData::set(Value key, Value value) {
  depth = std::max(depth, 1 + std::max(value_depth(key), value_depth(value)));
  for (auto& [k, v] : items) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  items.emplace_back(std::move(key), std::move(value));
}

bool Object::set_attr(const std::string&, Value) { return false; }

int value_depth(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List: return v.list().depth;
    case Value::Kind::Dict: return v.dict().depth;
    case Value::Kind::Object: return v.object().depth();
    default: return 0;
  }
}

namespace {

// A box made during a render counts its bytes on the render's meter
// (chat_memory_bytes) until it is freed.
template <class T>
std::shared_ptr<T> metered(std::unique_ptr<T> box, int64_t bytes) {
  auto meter = held_meter();
  if (!meter || bytes == 0) return std::shared_ptr<T>(std::move(box));
  meter->fetch_add(bytes, std::memory_order_relaxed);
  return std::shared_ptr<T>(box.release(), [meter, bytes](T* p) {
    meter->fetch_sub(bytes, std::memory_order_relaxed);
    delete p;
  });
}

std::shared_ptr<ListData> metered_list(std::vector<Value> items) {
  const auto bytes = int64_t(items.size() * kItemBytes);
  auto d = std::make_unique<ListData>();
  d->items = std::move(items);
  return metered(std::move(d), bytes);
}

int items_depth(const std::vector<Value>& items) {
  int d = 0;
  for (const Value& v : items) d = std::max(d, value_depth(v));
  return d + 1;
}

}  // namespace

Value Value::string(std::string s) {
  const auto bytes = int64_t(s.size());
  return make<std::shared_ptr<const std::string>>(
      metered(std::make_unique<const std::string>(std::move(s)), bytes));
}

Value Value::list(std::vector<Value> items, bool tuple) {
  const int depth = items_depth(items);
  auto d = metered_list(std::move(items));
  d->depth = depth;
  d->is_tuple = tuple;
  return make<std::shared_ptr<ListData>>(std::move(d));
}

Value Value::view(std::vector<Value> items, std::string view_name) {
  const int depth = items_depth(items);
  auto d = metered_list(std::move(items));
  d->depth = depth;
  d->view = std::move(view_name);
  return make<std::shared_ptr<ListData>>(std::move(d));
}

Value Value::range(std::vector<Value> items, std::string args) {
  auto d = metered_list(std::move(items));
  d->view = "range";
  d->range_args = std::move(args);
  return make<std::shared_ptr<ListData>>(std::move(d));
}

Value Value::dict(std::vector<std::pair<Value, Value>> items) {
  auto d = std::make_shared<DictData>();
  for (auto& [k, v] : items) d->set(std::move(k), std::move(v));
  return make<std::shared_ptr<DictData>>(std::move(d));
}

Value Value::iterator(std::vector<Value> items, std::string type_name) {
  auto d = std::make_shared<IteratorData>();
  d->items = std::move(items);
  d->type_name = std::move(type_name);
  return make<std::shared_ptr<IteratorData>>(std::move(d));
}

Value Value::function(std::string name, std::function<Result<Value>(const CallArgs&)> f) {
  auto d = std::make_shared<Function>();
  d->name = std::move(name);
  d->call = std::move(f);
  return make<std::shared_ptr<Function>>(std::move(d));
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::List: return std::get<std::shared_ptr<ListData>>(v_).get();
    case Kind::Dict: return std::get<std::shared_ptr<DictData>>(v_).get();
    case Kind::Iterator: return std::get<std::shared_ptr<IteratorData>>(v_).get();
    case Kind::Object: return std::get<std::shared_ptr<jinja::Object>>(v_).get();
    case Kind::Function: return std::get<std::shared_ptr<Function>>(v_).get();
    default: return nullptr;
  }
}

double Value::to_double() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  if (is_int()) return static_cast<double>(as_int());
  return as_float();
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined:
    case Value::Kind::None: return false;
    case Value::Kind::Bool: return v.as_bool();
    case Value::Kind::Int: return v.as_int() != 0;
    case Value::Kind::Float: return v.as_float() != 0;
    case Value::Kind::String: return !v.as_string().empty();
    case Value::Kind::List: return !v.list().items.empty();
    case Value::Kind::Dict: return !v.dict().items.empty();
    default: return true;
  }
}

namespace {

std::string address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

}  // namespace

bool append_repr(std::string& out, const Value& v, int level, size_t cap) {
  // Namespaces can hold themselves: stop where Python would print "...".
  if (level > kMaxValueDepth + 10) {
    out += "...";
    return out.size() <= cap;
  }
  switch (v.kind()) {
    case Value::Kind::Undefined: out += "Undefined"; break;
    case Value::Kind::None: out += "None"; break;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; break;
    case Value::Kind::Int: out += std::to_string(v.as_int()); break;
    case Value::Kind::Float: out += py_float_repr(v.as_float()); break;
    case Value::Kind::String: {
      // The quoted form is at least two bytes longer: not built when that
      // is already too long.
      const std::string& s = v.as_string();
      if (out.size() + s.size() + 2 > cap) return false;
      out += py_repr_string(s);
      break;
    }
    case Value::Kind::List: {
      const ListData& l = v.list();
      if (l.view == "range") {
        out += "range(" + l.range_args + ")";
        break;
      }
      out += !l.view.empty() ? l.view + "([" : l.is_tuple ? "(" : "[";
      for (size_t i = 0; i < l.items.size(); ++i) {
        if (i) out += ", ";
        if (!append_repr(out, l.items[i], level + 1, cap)) return false;
      }
      if (l.is_tuple && l.items.size() == 1) out += ",";
      out += !l.view.empty() ? "])" : l.is_tuple ? ")" : "]";
      break;
    }
    case Value::Kind::Dict: {
      out += "{";
      bool first = true;
      for (const auto& [k, val] : v.dict().items) {
        if (!first) out += ", ";
        first = false;
        if (!append_repr(out, k, level + 1, cap)) return false;
        out += ": ";
        if (!append_repr(out, val, level + 1, cap)) return false;
      }
      out += "}";
      break;
    }
    case Value::Kind::Iterator:
      out += "<" + v.iter().type_name + " object at " + address(v.identity()) + ">";
      break;
    case Value::Kind::Object: return v.object().append_repr(out, level, cap);
    case Value::Kind::Function: out += "<function " + v.function().name + ">"; break;
  }
  return out.size() <= cap;
}

Result<std::string> repr(const Value& v) {
  std::string out;
  size_t cap = text_cap();
  if (!append_repr(out, v, 0, cap))
    return text_over(std::max<uint64_t>(out.size(), cap + 1),
                     "the size in bytes of the printed form of a " + type_name(v) + ", at least");
  return out;
}

Result<std::string> to_str(const Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_undefined()) return std::string();
  return repr(v);
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::None: return "NoneType";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Float: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::List:
      if (!v.list().view.empty()) return v.list().view;
      return v.list().is_tuple ? "tuple" : "list";
    case Value::Kind::Dict: return "dict";
    case Value::Kind::Iterator: return v.iter().type_name;
    case Value::Kind::Object: return v.object().type_name();
    case Value::Kind::Function: return "function";
  }
  return "";
}

std::string object_description(const Value& v) {
  if (v.is_none()) return "'None'";
  return "'" + type_name(v) + " object'";
}

bool equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.as_string() == b.as_string();
    case K::List: {
      const ListData &x = a.list(), &y = b.list();
      if (x.is_tuple != y.is_tuple || x.view != y.view || x.items.size() != y.items.size()) return false;
      for (size_t i = 0; i < x.items.size(); ++i)
        if (!equals(x.items[i], y.items[i])) return false;
      return true;
    }
    case K::Dict: {
      const DictData &x = a.dict(), &y = b.dict();
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, v] : x.items) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

Result<int> compare(const Value& a, const Value& b) {
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
      int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    double x = a.to_double(), y = b.to_double();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple() && a.list().view.empty() &&
      b.list().view.empty()) {
    const auto &x = a.list().items, &y = b.list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return error("'<' not supported between instances of '" + type_name(a) + "' and '" +
               type_name(b) + "'");
}

bool hashable(const Value& v) {
  if (v.is_dict()) return false;
  if (v.is_list()) {
    const ListData& l = v.list();
    if (l.view == "range") return true;
    if (!l.is_tuple || !l.view.empty()) return false;
    for (const Value& x : l.items)
      if (!hashable(x)) return false;
  }
  return true;
}

Result<std::vector<Value>> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return std::vector<Value>{};
    case Value::Kind::String: {
      std::vector<Value> out;
      const std::string& s = v.as_string();
      ARCH_TRY_STATUS(check_items(char_count(s), "the characters of a string as a list"));
      out.reserve(char_count(s));
      for (size_t i = 0; i < s.size();) {
        size_t n = decode_utf8(s, i).len;
        out.push_back(Value::string(s.substr(i, n)));
        i += n;
      }
      return out;
    }
    case Value::Kind::List: return v.list().items;
    case Value::Kind::Dict: {
      std::vector<Value> out;
      for (const auto& kv : v.dict().items) out.push_back(kv.first);
      return out;
    }
    case Value::Kind::Iterator: {
      IteratorData& it = v.iter();
      std::vector<Value> out(it.items.begin() + static_cast<std::ptrdiff_t>(it.pos), it.items.end());
      it.pos = it.items.size();
      return out;
    }
    default: return error("'" + type_name(v) + "' object is not iterable");
  }
}

Result<int64_t> length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return int64_t{0};
    case Value::Kind::String: return static_cast<int64_t>(char_count(v.as_string()));
    case Value::Kind::List: return static_cast<int64_t>(v.list().items.size());
    case Value::Kind::Dict: return static_cast<int64_t>(v.dict().items.size());
    default: return error("object of type '" + type_name(v) + "' has no len()");
  }
}

Error undefined_error(const Value& v) { return error(v.undefined_hint()); }

namespace {

template <class J>
Result<Value> json_to_value(const J& j, int level) {
  // A container at `level` makes the context level + 1 deep.
  if (j.is_structured() && level >= depth_cap())
    return check_depth(level + 1, "the nesting of the context's arrays and objects").error();
  switch (j.type()) {
    case nlohmann::json::value_t::null: return Value::none();
    case nlohmann::json::value_t::boolean: return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer: return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value::integer(static_cast<int64_t>(u));
      return Value::number(static_cast<double>(u));
    }
    case nlohmann::json::value_t::number_float: return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string: return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) {
        ARCH_TRY(Value v, json_to_value(e, level + 1));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      auto d = std::make_shared<DictData>();
      d->items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        ARCH_TRY(Value v, json_to_value(it.value(), level + 1));
        d->depth = std::max(d->depth, 1 + value_depth(v));
        d->items.emplace_back(Value::string(it.key()), std::move(v));
      }
      return Value::dict(std::move(d));
    }
    case nlohmann::json::value_t::binary: {
      std::vector<Value> items;
      for (uint8_t b : j.get_binary()) items.push_back(Value::integer(b));
      return Value::list(std::move(items));
    }
    default: return Value::none();
  }
}

}  // namespace

Result<Value> from_json(const nlohmann::json& j) { return json_to_value(j, 0); }
Result<Value> from_json(const nlohmann::ordered_json& j) { return json_to_value(j, 0); }

}  // namespace arch::jinja

#include "importer/text/chat_template/access.h"

#include "importer/text/chat_template/methods.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

bool is_index(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t index_of(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }

Value unsafe(const Value& obj, const std::string& name) {
  return Value::undefined("access to attribute " + py_repr_string(name) + " of " +
                          py_repr_string(type_name(obj)) + " object is unsafe.");
}

Value no_attribute(const Value& obj, const std::string& name) {
  return Value::undefined(object_description(obj) + " has no attribute " + py_repr_string(name));
}

std::string description_unquoted(const Value& obj) {
  return obj.is_none() ? "None" : type_name(obj) + " object";
}

// obj[key] as Python evaluates it; nullopt where Python raises TypeError,
// KeyError or IndexError (jinja2 then tries the attribute).
std::optional<Value> python_item(const Value& obj, const Value& key) {
  switch (obj.kind()) {
    case Value::Kind::Dict:
      if (const Value* v = obj.dict().find(key)) return *v;
      return std::nullopt;
    case Value::Kind::List: {
      if (!is_index(key) || (!obj.list().view.empty() && obj.list().view != "range")) return std::nullopt;
      const auto& items = obj.list().items;
      int64_t i = index_of(key), n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return std::nullopt;
      return items[static_cast<size_t>(i)];
    }
    case Value::Kind::String: {
      // Walked to, not indexed: a table of every character's offset would
      // cost eight bytes a character each time.
      if (!is_index(key)) return std::nullopt;
      const std::string& s = obj.as_string();
      int64_t i = index_of(key);
      if (i < 0) i += static_cast<int64_t>(char_count(s));
      if (i < 0) return std::nullopt;
      size_t at = 0;
      for (int64_t k = 0; k < i && at < s.size(); ++k) at += decode_utf8(s, at).len;
      if (at >= s.size()) return std::nullopt;
      return Value::string(s.substr(at, decode_utf8(s, at).len));
    }
    default: return std::nullopt;
  }
}

}  // namespace

std::optional<Value> python_attribute(const Value& obj, const std::string& name) {
  if (obj.is_object()) return obj.object().get_attr(name);
  return bound_method(obj, name);
}

Result<Value> get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (!name.empty() && name[0] == '_') return unsafe(obj, name);
  if (auto a = python_attribute(obj, name)) return *a;
  if (auto item = python_item(obj, Value::string(name))) return *item;
  return no_attribute(obj, name);
}

Result<Value> get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  if (auto item = python_item(obj, key)) return *item;
  if (key.is_string()) {
    const std::string& name = key.as_string();
    if (!name.empty() && name[0] == '_') return unsafe(obj, name);
    if (auto a = python_attribute(obj, name)) return *a;
    return no_attribute(obj, name);
  }
  ARCH_TRY(std::string shown, repr(key));
  return Value::undefined(description_unquoted(obj) + " has no element " + shown);
}

Result<Value> get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) return undefined_error(obj);
  for (const Value* v : {&start, &stop, &step}) {
    if (v->is_undefined()) return undefined_error(*v);
    if (!v->is_none() && !is_index(*v))
      return error("slice indices must be integers or None or have an __index__ method");
  }
  // jinja2 slices with Python's own subscript (not its getitem), so slicing
  // anything but a str, list, tuple or range is Python's TypeError.
  if (obj.is_dict()) return error("unhashable type: 'slice'");
  if (!obj.is_string() && !(obj.is_list() && (obj.list().view.empty() || obj.list().view == "range")))
    return error("'" + type_name(obj) + "' object is not subscriptable");
  int64_t st = step.is_none() ? 1 : index_of(step);
  if (st == 0) return error("slice step cannot be zero");
  int64_t n;
  if (obj.is_string()) {
    n = static_cast<int64_t>(char_count(obj.as_string()));
  } else {
    n = static_cast<int64_t>(obj.list().items.size());
  }
  // CPython's PySlice_AdjustIndices.
  auto adjust = [&](const Value& v, int64_t dflt) {
    if (v.is_none()) return dflt;
    int64_t i = index_of(v);
    if (i < 0) {
      i += n;
      if (i < 0) i = st < 0 ? -1 : 0;
    } else if (i >= n) {
      i = st < 0 ? n - 1 : n;
    }
    return i;
  };
  int64_t b = adjust(start, st < 0 ? n - 1 : 0);
  int64_t e = adjust(stop, st < 0 ? -1 : n);
  // Indices b, b + st, ... up to e: each within [0, n), and no more of them than n.
  auto for_each_index = [&](auto&& f) {
    for (int64_t i = b; st > 0 ? i < e : i > e;) {
      f(i);
      if (__builtin_add_overflow(i, st, &i)) break;
    }
  };
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    if (st == 1) {  // walked to: no table of offsets for a plain s[a:b]
      if (e <= b) return Value::string(std::string());
      size_t from = byte_offset(s, size_t(b));
      return Value::string(s.substr(from, byte_offset(s, size_t(e - b), from) - from));
    }
    std::vector<size_t> off = char_offsets(s);
    std::string out;
    for_each_index([&](int64_t i) { out.append(s, off[i], off[i + 1] - off[i]); });
    return Value::string(std::move(out));
  }
  std::vector<Value> out;
  for_each_index([&](int64_t i) { out.push_back(obj.list().items[static_cast<size_t>(i)]); });
  return Value::list(std::move(out), obj.is_tuple());
}

}  // namespace arch::jinja

#include "importer/text/chat_template/methods.h"

#include <map>
#include <set>

#include "importer/text/chat_template/args.h"
#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/str_format.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

using StrMethod = Result<Value> (*)(const std::string& self, const CallArgs& args, const std::string& what);

Value none() { return Value::none(); }
Value str(std::string s) { return Value::string(std::move(s)); }

Result<std::optional<std::string>> opt_str(const std::string& what, const char* param, const Value& v) {
  if (v.is_none()) return std::optional<std::string>();
  ARCH_TRY(std::string s, str_arg(what, param, v));
  return std::optional<std::string>(std::move(s));
}

// s[start:end] by code points, and the code-point offset of its start;
// walked, not indexed, so a long string costs no table of offsets.
struct Window {
  std::string_view text;
  int64_t offset = 0;
};

Result<Window> window(const std::string& s, const Value& start, const Value& end, const std::string& what) {
  Window w;
  if (start.is_none() && end.is_none()) {
    w.text = s;
    return w;
  }
  int64_t n = static_cast<int64_t>(char_count(s));
  auto adjust = [&](const Value& v, int64_t dflt) -> Result<int64_t> {
    if (v.is_none()) return dflt;
    ARCH_TRY(int64_t i, int_arg(what, "start/end", v));
    if (i < 0) i = std::max<int64_t>(0, i + n);
    return std::min(i, n);
  };
  ARCH_TRY(int64_t b, adjust(start, 0));
  ARCH_TRY(int64_t e, adjust(end, n));
  w.offset = b;
  if (e > b) {
    size_t from = byte_offset(s, size_t(b));
    w.text = std::string_view(s).substr(from, byte_offset(s, size_t(e - b), from) - from);
  }
  return w;
}

Result<Value> affix_test(const std::string& self, const CallArgs& a, const std::string& what, bool prefix) {
  ARCH_TRY(auto v, bind_args(what, a, {{"affix", std::nullopt}, {"start", none()}, {"end", none()}}));
  ARCH_TRY(Window w, window(self, v[1], v[2], what));
  std::vector<Value> options;
  if (v[0].is_tuple()) options = v[0].list().items;
  else options.push_back(v[0]);
  for (const Value& o : options) {
    if (!o.is_string())
      return error(what + " first arg must be str or a tuple of str, not " + type_name(o));
    const std::string& x = o.as_string();
    if (x.size() > w.text.size()) continue;
    if (prefix ? w.text.compare(0, x.size(), x) == 0
               : w.text.compare(w.text.size() - x.size(), x.size(), x) == 0)
      return Value::boolean(true);
  }
  return Value::boolean(false);
}

Result<Value> strip_method(const std::string& self, const CallArgs& a, const std::string& what, int sides) {
  ARCH_TRY(auto v, bind_args(what, a, {{"chars", none()}}));
  ARCH_TRY(auto chars, opt_str(what, "chars", v[0]));
  return str(py_strip(self, sides, chars));
}

Result<Value> split_method(const std::string& self, const CallArgs& a, const std::string& what, bool right) {
  ARCH_TRY(auto v, bind_args(what, a, {{"sep", none()}, {"maxsplit", Value::integer(-1)}}));
  ARCH_TRY(auto sep, opt_str(what, "sep", v[0]));
  ARCH_TRY(int64_t maxsplit, int_arg(what, "maxsplit", v[1]));
  if (sep && sep->empty()) return error("empty separator");
  ARCH_TRY_STATUS(check_items(py_split_count(self, sep, maxsplit), "the list " + what + " makes"));
  std::vector<Value> out;
  for (auto& piece : right ? py_rsplit(self, sep, maxsplit) : py_split(self, sep, maxsplit))
    out.push_back(str(std::move(piece)));
  return Value::list(std::move(out));
}

Result<Value> find_method(const std::string& self, const CallArgs& a, const std::string& what, bool reverse,
                          bool raise) {
  ARCH_TRY(auto v, bind_args(what, a, {{"sub", std::nullopt}, {"start", none()}, {"end", none()}}));
  ARCH_TRY(std::string sub, str_arg(what, "sub", v[0]));
  ARCH_TRY(Window w, window(self, v[1], v[2], what));
  int64_t i = reverse ? py_rfind(w.text, sub) : py_find(w.text, sub);
  if (i < 0 && raise) return error("substring not found");
  return Value::integer(i < 0 ? -1 : i + w.offset);
}

Result<Value> justify(const std::string& self, const CallArgs& a, const std::string& what, char how) {
  ARCH_TRY(auto v, bind_args(what, a, {{"width", std::nullopt}, {"fillchar", str(" ")}}));
  ARCH_TRY(int64_t width, int_arg(what, "width", v[0]));
  ARCH_TRY(std::string fill, str_arg(what, "fillchar", v[1]));
  if (char_count(fill) != 1) return error("The fill character must be exactly one character long");
  uint64_t fill_bytes;
  if (__builtin_mul_overflow(padding(self, width), uint64_t(fill.size()), &fill_bytes)) fill_bytes = UINT64_MAX;
  ARCH_TRY_STATUS(check_text_sum(self.size(), fill_bytes, "the size in bytes of the string " + what + " makes"));
  if (how == '^') return str(py_center(self, width, fill));
  int64_t n = static_cast<int64_t>(char_count(self));
  std::string pad;
  for (int64_t i = n; i < width; ++i) pad += fill;
  return str(how == '<' ? self + pad : pad + self);
}

Result<Value> partition(const std::string& self, const CallArgs& a, const std::string& what, bool right) {
  ARCH_TRY(auto v, bind_args(what, a, {{"sep", std::nullopt}}));
  ARCH_TRY(std::string sep, str_arg(what, "sep", v[0]));
  if (sep.empty()) return error("empty separator");
  size_t at = right ? self.rfind(sep) : self.find(sep);
  if (at == std::string::npos)
    return right ? Value::list({str(""), str(""), str(self)}, true) : Value::list({str(self), str(""), str("")}, true);
  return Value::list({str(self.substr(0, at)), str(sep), str(self.substr(at + sep.size()))}, true);
}

template <bool (*Pred)(uint32_t)>
Result<Value> all_chars(const std::string& self, const CallArgs& a, const std::string& what) {
  ARCH_TRY(auto v, bind_args(what, a, {}));
  if (self.empty()) return Value::boolean(false);
  for (size_t i = 0; i < self.size();) {
    Utf8Char c = decode_utf8(self, i);
    if (!Pred(c.cp)) return Value::boolean(false);
    i += c.len;
  }
  return Value::boolean(true);
}

template <std::string (*F)(std::string_view)>
Result<Value> case_method(const std::string& self, const CallArgs& a, const std::string& what) {
  ARCH_TRY(auto v, bind_args(what, a, {}));
  // Case mapping grows a string at most three times: checked once made.
  std::string out = F(self);
  ARCH_TRY_STATUS(check_text(out.size(), "the size in bytes of the string " + what + " makes"));
  return str(std::move(out));
}

const std::map<std::string, StrMethod>& str_methods() {
  static const std::map<std::string, StrMethod> m = {
      {"startswith", [](const std::string& s, const CallArgs& a, const std::string& w) { return affix_test(s, a, w, true); }},
      {"endswith", [](const std::string& s, const CallArgs& a, const std::string& w) { return affix_test(s, a, w, false); }},
      {"strip", [](const std::string& s, const CallArgs& a, const std::string& w) { return strip_method(s, a, w, kStripBoth); }},
      {"lstrip", [](const std::string& s, const CallArgs& a, const std::string& w) { return strip_method(s, a, w, kStripLeft); }},
      {"rstrip", [](const std::string& s, const CallArgs& a, const std::string& w) { return strip_method(s, a, w, kStripRight); }},
      {"split", [](const std::string& s, const CallArgs& a, const std::string& w) { return split_method(s, a, w, false); }},
      {"rsplit", [](const std::string& s, const CallArgs& a, const std::string& w) { return split_method(s, a, w, true); }},
      {"splitlines",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"keepends", Value::boolean(false)}}));
         ARCH_TRY_STATUS(check_items(py_line_count(s), "the list " + w + " makes"));
         std::vector<Value> out;
         py_each_line(s, truthy(v[0]), [&](std::string_view line) { out.push_back(str(std::string(line))); });
         return Value::list(std::move(out));
       }},
      {"upper", case_method<py_upper>},
      {"lower", case_method<py_lower>},
      {"casefold", case_method<py_lower>},
      {"title", case_method<py_title>},
      {"capitalize", case_method<py_capitalize>},
      {"swapcase", case_method<py_swapcase>},
      {"replace",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", Value::integer(-1)}}));
         ARCH_TRY(std::string old, str_arg(w, "old", v[0]));
         ARCH_TRY(std::string repl, str_arg(w, "new", v[1]));
         ARCH_TRY(int64_t count, int_arg(w, "count", v[2]));
         ARCH_TRY_STATUS(
             check_text(py_replace_size(s, old, repl, count), "the size in bytes of the string " + w + " makes"));
         return str(py_replace(s, old, repl, count));
       }},
      {"find", [](const std::string& s, const CallArgs& a, const std::string& w) { return find_method(s, a, w, false, false); }},
      {"rfind", [](const std::string& s, const CallArgs& a, const std::string& w) { return find_method(s, a, w, true, false); }},
      {"index", [](const std::string& s, const CallArgs& a, const std::string& w) { return find_method(s, a, w, false, true); }},
      {"rindex", [](const std::string& s, const CallArgs& a, const std::string& w) { return find_method(s, a, w, true, true); }},
      {"count",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"sub", std::nullopt}, {"start", none()}, {"end", none()}}));
         ARCH_TRY(std::string sub, str_arg(w, "sub", v[0]));
         ARCH_TRY(Window win, window(s, v[1], v[2], w));
         return Value::integer(py_count(win.text, sub));
       }},
      {"join",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"iterable", std::nullopt}}));
         ARCH_TRY(auto items, iterate(v[0]));
         std::string out;
         for (size_t i = 0; i < items.size(); ++i) {
           if (!items[i].is_string())
             return error("sequence item " + std::to_string(i) + ": expected str instance, " +
                          type_name(items[i]) + " found");
           ARCH_TRY_STATUS(check_text_sum(out.size(), (i ? s.size() : 0) + items[i].as_string().size(),
                                          "the size in bytes of the string " + w + " makes"));
           if (i) out += s;
           out += items[i].as_string();
         }
         return str(std::move(out));
       }},
      {"center", [](const std::string& s, const CallArgs& a, const std::string& w) { return justify(s, a, w, '^'); }},
      {"ljust", [](const std::string& s, const CallArgs& a, const std::string& w) { return justify(s, a, w, '<'); }},
      {"rjust", [](const std::string& s, const CallArgs& a, const std::string& w) { return justify(s, a, w, '>'); }},
      {"zfill",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"width", std::nullopt}}));
         ARCH_TRY(int64_t width, int_arg(w, "width", v[0]));
         int64_t n = static_cast<int64_t>(char_count(s));
         if (n >= width) return str(s);
         ARCH_TRY_STATUS(check_text_sum(s.size(), padding(s, width), "the size in bytes of the string " + w + " makes"));
         std::string sign, body = s;
         if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
           sign = s.substr(0, 1);
           body = s.substr(1);
         }
         return str(sign + std::string(static_cast<size_t>(width - n), '0') + body);
       }},
      {"format",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(std::string out, py_str_format(s, a));
         return str(std::move(out));
       }},
      {"partition", [](const std::string& s, const CallArgs& a, const std::string& w) { return partition(s, a, w, false); }},
      {"rpartition", [](const std::string& s, const CallArgs& a, const std::string& w) { return partition(s, a, w, true); }},
      {"removeprefix",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"prefix", std::nullopt}}));
         ARCH_TRY(std::string p, str_arg(w, "prefix", v[0]));
         return str(s.compare(0, p.size(), p) == 0 ? s.substr(p.size()) : s);
       }},
      {"removesuffix",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {{"suffix", std::nullopt}}));
         ARCH_TRY(std::string p, str_arg(w, "suffix", v[0]));
         bool has = !p.empty() && s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0;
         return str(has ? s.substr(0, s.size() - p.size()) : s);
       }},
      {"isalnum", all_chars<py_isalnum>},
      {"isalpha", all_chars<py_isalpha>},
      {"isdigit", all_chars<py_isdigit>},
      {"isdecimal", all_chars<py_isdigit>},
      {"isnumeric", all_chars<py_isdigit>},
      {"isspace", all_chars<py_isspace>},
      {"isascii",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {}));
         for (unsigned char c : s)
           if (c >= 0x80) return Value::boolean(false);
         return Value::boolean(true);
       }},
      {"islower",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {}));
         return Value::boolean(py_islower(s));
       }},
      {"isupper",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {}));
         return Value::boolean(py_isupper(s));
       }},
      {"istitle",
       [](const std::string& s, const CallArgs& a, const std::string& w) -> Result<Value> {
         ARCH_TRY(auto v, bind_args(w, a, {}));
         return Value::boolean(!s.empty() && py_title(s) == s && py_lower(s) != s);
       }},
  };
  return m;
}

// Real str methods left out.
const std::set<std::string> kOtherStrMethods = {"encode",       "expandtabs", "format_map", "isidentifier",
                                                "isprintable",  "maketrans",  "translate"};

Value failing(const std::string& name, const std::string& message) {
  return Value::function(name, [message](const CallArgs&) -> Result<Value> { return error(message); });
}

// What jinja2's immutable sandbox gives for a modifying method: an undefined
// value that fails when called.
Value unsafe_method(const std::string& type, const std::string& name) {
  return Value::undefined("access to attribute '" + name + "' of '" + type +
                          "' object is unsafe (chat templates cannot modify values)");
}

std::optional<Value> dict_method(const Value& obj, const std::string& name) {
  std::string what = "dict." + name + "()";
  auto no_args = [obj, what](auto make) {
    return Value::function(what, [obj, what, make](const CallArgs& a) -> Result<Value> {
      ARCH_TRY(auto v, bind_args(what, a, {}));
      return make(obj.dict());
    });
  };
  if (name == "get")
    return Value::function(what, [obj, what](const CallArgs& a) -> Result<Value> {
      ARCH_TRY(auto v, bind_args(what, a, {{"key", std::nullopt}, {"default", Value::none()}}));
      const Value* found = obj.dict().find(v[0]);
      return found ? *found : v[1];
    });
  if (name == "items")
    return no_args([](const DictData& d) {
      std::vector<Value> out;
      for (const auto& [k, v] : d.items) out.push_back(Value::list({k, v}, true));
      return Value::view(std::move(out), "dict_items");
    });
  if (name == "keys")
    return no_args([](const DictData& d) {
      std::vector<Value> out;
      for (const auto& kv : d.items) out.push_back(kv.first);
      return Value::view(std::move(out), "dict_keys");
    });
  if (name == "values")
    return no_args([](const DictData& d) {
      std::vector<Value> out;
      for (const auto& kv : d.items) out.push_back(kv.second);
      return Value::view(std::move(out), "dict_values");
    });
  if (name == "copy") return no_args([](const DictData& d) { return Value::dict(d.items); });
  static const std::set<std::string> kModifying = {"clear", "pop", "popitem", "setdefault", "update"};
  if (kModifying.count(name)) return unsafe_method("dict", name);
  if (name == "fromkeys") return failing(what, "dict.fromkeys() is not supported");
  return std::nullopt;
}

std::optional<Value> list_method(const Value& obj, const std::string& name) {
  std::string type = obj.is_tuple() ? "tuple" : "list";
  std::string what = type + "." + name + "()";
  if (name == "count")
    return Value::function(what, [obj, what](const CallArgs& a) -> Result<Value> {
      ARCH_TRY(auto v, bind_args(what, a, {{"value", std::nullopt}}));
      int64_t n = 0;
      for (const Value& x : obj.list().items) n += equals(x, v[0]);
      return Value::integer(n);
    });
  if (name == "index")
    return Value::function(what, [obj, what, type](const CallArgs& a) -> Result<Value> {
      ARCH_TRY(auto v, bind_args(what, a, {{"value", std::nullopt}}));
      const auto& items = obj.list().items;
      for (size_t i = 0; i < items.size(); ++i)
        if (equals(items[i], v[0])) return Value::integer(static_cast<int64_t>(i));
      ARCH_TRY(std::string shown, repr(v[0]));
      return error(shown + " is not in " + type);
    });
  if (obj.is_tuple()) return std::nullopt;
  if (name == "copy")
    return Value::function(what, [obj, what](const CallArgs& a) -> Result<Value> {
      ARCH_TRY(auto v, bind_args(what, a, {}));
      return Value::list(obj.list().items);
    });
  static const std::set<std::string> kModifying = {"append", "clear",  "extend", "insert",
                                                   "pop",    "remove", "reverse", "sort"};
  if (kModifying.count(name)) return unsafe_method("list", name);
  return std::nullopt;
}

}  // namespace

std::optional<Value> bound_method(const Value& obj, const std::string& name) {
  if (obj.is_string()) {
    const auto& m = str_methods();
    auto it = m.find(name);
    std::string what = "str." + name + "()";
    if (it != m.end()) {
      StrMethod f = it->second;
      Value self = obj;  // shared, not copied
      return Value::function(what, [f, self, what](const CallArgs& a) { return f(self.as_string(), a, what); });
    }
    if (kOtherStrMethods.count(name)) return failing(what, what + " is not supported");
    return std::nullopt;
  }
  if (obj.is_dict()) return dict_method(obj, name);
  if (obj.is_list()) return list_method(obj, name);
  return std::nullopt;
}

}  // namespace arch::jinja

#include "importer/text/chat_template/filters.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "importer/text/chat_template/access.h"
#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/json_dump.h"
#include "importer/text/chat_template/operators.h"
#include "importer/text/chat_template/predicates.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

using FilterFn = Result<Value> (*)(const Value& v, const CallArgs& a, const std::string& what);

Value none() { return Value::none(); }
Value str(std::string s) { return Value::string(std::move(s)); }
Value boolean(bool b) { return Value::boolean(b); }

// ---- attribute getters (jinja2's make_attrgetter) ----

// "a.b.0" -> ["a", "b", 0]; an int -> [int]; none -> [] (the item itself).
std::vector<Value> attribute_parts(const Value& attribute) {
  std::vector<Value> parts;
  if (attribute.is_none() || attribute.is_undefined()) return parts;
  if (!attribute.is_string()) return {attribute};
  for (auto& p : py_split(attribute.as_string(), std::string("."), -1)) {
    bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; });
    parts.push_back(digits ? Value::integer(std::strtoll(p.c_str(), nullptr, 10)) : str(p));
  }
  return parts;
}

Value ignore_case(const Value& v) { return v.is_string() ? str(py_lower(v.as_string())) : v; }

// The new strings a filter keeps one per item (lowered sort keys, mapped
// values) are all held at once: a list holding one long string a thousand
// times would make a thousand copies. Their total is bounded like one
// string, by chat_text_bytes, as they are made.
class HeldStrings {
 public:
  explicit HeldStrings(const std::string& what) : what_("the size in bytes of the strings " + what + " keeps") {}
  // `made` is new unless it is `from` itself (a filter that returned its operand).
  Status add(const Value& made, const Value& from) {
    if (!made.is_string() || (from.is_string() && &made.as_string() == &from.as_string())) return {};
    bytes_ += made.as_string().size();
    return check_text(bytes_, what_);
  }

 private:
  std::string what_;
  uint64_t bytes_ = 0;
};

// A string a filter made by a transformation that may grow it a few times
// (case mapping): checked once made, as its growth is bounded.
Result<Value> made(std::string s, const std::string& w) {
  ARCH_TRY_STATUS(check_text(s.size(), "the size in bytes of the string " + w + " makes"));
  return str(std::move(s));
}

Result<Value> get_path(Value item, const std::vector<Value>& parts, const Value* dflt = nullptr) {
  for (const Value& part : parts) {
    ARCH_TRY(item, get_item(item, part));
    if (dflt && item.is_undefined()) item = *dflt;
  }
  return item;
}

// ---- sorting with Python comparisons ----

Status sort_by_keys(std::vector<Value>& items, std::vector<Value> keys, bool reverse) {
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::string failure;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (!failure.empty()) return false;
    auto c = reverse ? compare(keys[b], keys[a]) : compare(keys[a], keys[b]);
    if (!c.ok()) {
      failure = c.error().message;
      return false;
    }
    return *c < 0;
  });
  if (!failure.empty()) return error(failure);
  std::vector<Value> sorted;
  for (size_t i : order) sorted.push_back(items[i]);
  items = std::move(sorted);
  return {};
}

// ---- strings ----

Result<Value> f_trim(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"chars", none()}}));
  std::optional<std::string> chars;
  if (!p[0].is_none()) {
    ARCH_TRY(chars, str_arg(w, "chars", p[0]));
  }
  ARCH_TRY(std::string s, to_str(v));
  return str(py_strip(s, kStripBoth, chars));
}

template <std::string (*F)(std::string_view)>
Result<Value> f_case(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  ARCH_TRY(std::string s, to_str(v));
  return made(F(s), w);
}

// jinja2's title: words start after runs of -, whitespace, (, {, [ or <.
std::string jinja_title(std::string_view s) {
  std::string out;
  size_t i = 0;
  auto is_sep = [](uint32_t c) { return c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || py_isspace(c); };
  while (i < s.size()) {
    size_t b = i;
    bool sep = is_sep(decode_utf8(s, i).cp);
    while (i < s.size() && is_sep(decode_utf8(s, i).cp) == sep) i += decode_utf8(s, i).len;
    std::string_view piece = s.substr(b, i - b);
    if (sep) {
      out += piece;
    } else {
      size_t n = decode_utf8(piece, 0).len;
      out += py_upper(piece.substr(0, n)) + py_lower(piece.substr(n));
    }
  }
  return out;
}

Result<Value> f_replace(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"old", std::nullopt}, {"new", std::nullopt}, {"count", none()}}));
  int64_t count = -1;
  if (!p[2].is_none()) {
    ARCH_TRY(count, int_arg(w, "count", p[2]));
  }
  ARCH_TRY(std::string s, to_str(v));
  ARCH_TRY(std::string old, to_str(p[0]));
  ARCH_TRY(std::string repl, to_str(p[1]));
  ARCH_TRY_STATUS(check_text(py_replace_size(s, old, repl, count), "the size in bytes of the string " + w + " makes"));
  return str(py_replace(s, old, repl, count));
}

Result<Value> f_indent(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"width", Value::integer(4)}, {"first", boolean(false)}, {"blank", boolean(false)}}));
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_string()) return error(w + ": expected a string, got " + type_name(v));
  std::string indention;
  if (p[0].is_string()) {
    indention = p[0].as_string();
  } else {
    ARCH_TRY(int64_t n, int_arg(w, "width", p[0]));
    ARCH_TRY_STATUS(check_text(uint64_t(std::max<int64_t>(0, n)), "the size in bytes of the indentation " + w + " makes"));
    indention = std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
  }
  // jinja2 splits s + "\n" into lines and joins them again, indented: the
  // size is known from the lines before anything is built.
  const std::string text = v.as_string() + "\n";
  const bool blank = truthy(p[2]), first = truthy(p[1]);
  uint64_t lines = 0, indented = 0, bytes = 0;
  py_each_line(text, false, [&](std::string_view line) {
    bytes += line.size() + (lines ? 1 : 0);
    if (lines && (blank || !line.empty())) ++indented;
    ++lines;
  });
  if (first) ++indented;
  uint64_t extra;
  if (__builtin_mul_overflow(indented, uint64_t(indention.size()), &extra)) extra = UINT64_MAX;
  ARCH_TRY_STATUS(check_text_sum(bytes, extra, "the size in bytes of the string " + w + " makes"));
  std::string rv = first ? indention : "";
  rv.reserve(size_t(bytes + extra));
  size_t k = 0;
  py_each_line(text, false, [&](std::string_view line) {
    if (k++) {
      rv += '\n';
      if (blank || !line.empty()) rv += indention;
    }
    rv += line;
  });
  return str(std::move(rv));
}

Result<Value> f_center(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"width", Value::integer(80)}}));
  ARCH_TRY(int64_t width, int_arg(w, "width", p[0]));
  ARCH_TRY(std::string s, to_str(v));
  ARCH_TRY_STATUS(check_text_sum(s.size(), padding(s, width), "the size in bytes of the string " + w + " makes"));
  return str(py_center(s, width));
}

Result<Value> f_wordcount(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  ARCH_TRY(std::string s, to_str(v));
  int64_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    bool word = py_isalnum(c.cp) || c.cp == '_';
    if (word && !in_word) ++n;
    in_word = word;
    i += c.len;
  }
  return Value::integer(n);
}

Result<Value> f_format(const Value& v, const CallArgs& a, const std::string& w) {
  if (!a.positional.empty() && !a.keyword.empty())
    return error(w + ": can't handle positional and keyword arguments at the same time");
  Value args;
  if (!a.keyword.empty()) {
    std::vector<std::pair<Value, Value>> kv;
    for (const auto& [k, x] : a.keyword) kv.emplace_back(str(k), x);
    args = Value::dict(std::move(kv));
  } else {
    args = Value::list(a.positional, true);
  }
  ARCH_TRY(std::string fmt, to_str(v));
  ARCH_TRY(std::string s, percent_format(fmt, args));
  return str(std::move(s));
}

// The bytes html_escape gives, so it is sized before it is built.
uint64_t html_escaped_size(const std::string& s) {
  uint64_t n = s.size();
  for (char c : s) n += c == '<' || c == '>' ? 3 : c == '&' || c == '"' || c == '\'' ? 4 : 0;
  return n;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(size_t(html_escaped_size(s)));
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Result<Value> f_escape(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  ARCH_TRY(std::string s, to_str(v));
  ARCH_TRY_STATUS(check_text(html_escaped_size(s), "the size in bytes of the string " + w + " makes"));
  return str(html_escape(s));
}

Result<Value> f_safe(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  if (v.is_string()) return v;
  ARCH_TRY(std::string s, to_str(v));
  return str(std::move(s));
}

Result<Value> f_string(const Value& v, const CallArgs& a, const std::string& w) { return f_safe(v, a, w); }

// ---- numbers ----

// Python int(str, base): whitespace, sign, underscores between digits, a
// prefix matching the base.
std::optional<int64_t> parse_int(std::string s, int64_t base) {
  s = py_strip(s, kStripBoth, std::nullopt);
  bool neg = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  if (base == 0 || base == 16 || base == 8 || base == 2) {
    if (i + 1 < s.size() && s[i] == '0') {
      char x = static_cast<char>(s[i + 1] | 0x20);
      int64_t b = x == 'x' ? 16 : x == 'o' ? 8 : x == 'b' ? 2 : 0;
      if (b && (base == 0 || base == b)) {
        base = b;
        i += 2;
        if (i < s.size() && s[i] == '_') ++i;
      }
    }
    if (base == 0) base = 10;
  }
  if (base < 2 || base > 36 || i >= s.size()) return std::nullopt;
  uint64_t value = 0;
  bool prev_digit = false;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '_') {
      if (!prev_digit || i + 1 >= s.size()) return std::nullopt;
      prev_digit = false;
      continue;
    }
    int d = c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'z' ? (c | 0x20) - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (value > (UINT64_MAX - d) / static_cast<uint64_t>(base)) return std::nullopt;
    value = value * base + d;
    prev_digit = true;
  }
  if (!prev_digit) return std::nullopt;
  if (value > static_cast<uint64_t>(INT64_MAX) + (neg ? 1 : 0)) return std::nullopt;
  return neg ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
}

// Python float(str): whitespace, underscores between digits, inf/nan.
std::optional<double> parse_float(const std::string& raw) {
  std::string s = py_strip(raw, kStripBoth, std::nullopt), clean;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    clean += s[i];
  }
  std::string lower = py_lower(clean);
  size_t sign = (!lower.empty() && (lower[0] == '+' || lower[0] == '-')) ? 1 : 0;
  std::string body = lower.substr(sign);
  double sgn = sign && lower[0] == '-' ? -1 : 1;
  if (body == "inf" || body == "infinity") return sgn * INFINITY;
  if (body == "nan") return sgn * NAN;
  if (body.empty() || body.find_first_not_of("0123456789.e+-") != std::string::npos) return std::nullopt;
  if (body.find_first_of("0123456789") == std::string::npos) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double d = std::strtod(clean.c_str(), &end);
  if (!end || *end != '\0') return std::nullopt;
  return d;
}

Result<Value> f_int(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"default", Value::integer(0)}, {"base", Value::integer(10)}}));
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_int()) return v;
  if (v.is_bool()) return Value::integer(v.as_bool());
  if (v.is_float()) {
    double d = v.as_float();
    if (std::isnan(d)) return p[0];
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return error("cannot convert float infinity to integer");
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
  }
  if (v.is_string()) {
    ARCH_TRY(int64_t base, int_arg(w, "base", p[1]));
    if (auto i = parse_int(v.as_string(), base)) return Value::integer(*i);
    if (auto d = parse_float(v.as_string()); d && std::isfinite(*d) && std::fabs(*d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(std::trunc(*d)));
  }
  return p[0];
}

Result<Value> f_float(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"default", Value::number(0.0)}}));
  if (v.is_undefined()) return undefined_error(v);
  if (v.is_number()) return Value::number(v.to_double());
  if (v.is_string())
    if (auto d = parse_float(v.as_string())) return Value::number(*d);
  return p[0];
}

Result<Value> f_abs(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  if (v.is_int() || v.is_bool()) {
    int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
    if (i == INT64_MIN) return error("integer overflow");
    return Value::integer(i < 0 ? -i : i);
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  if (v.is_undefined()) return error("bad operand type for abs(): 'Undefined'");
  return error("bad operand type for abs(): '" + type_name(v) + "'");
}

// Python's round(x, n): correctly rounded, ties to even on the exact binary value.
double round_float(double x, int64_t n) {
  if (!std::isfinite(x)) return x;
  if (n > 300) return x;
  if (n >= 0) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(n), x);
    return std::strtod(buf, nullptr);
  }
  double p = std::pow(10.0, static_cast<double>(-n));
  return std::nearbyint(x / p) * p;
}

Result<Value> f_round(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"precision", Value::integer(0)}, {"method", str("common")}}));
  ARCH_TRY(int64_t precision, int_arg(w, "precision", p[0]));
  ARCH_TRY(std::string method, str_arg(w, "method", p[1]));
  if (method != "common" && method != "ceil" && method != "floor")
    return error("method must be common, ceil or floor");
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_number()) return error("type " + type_name(v) + " doesn't define __round__ method");
  if (method == "common") {
    if (!v.is_float()) {
      int64_t i = v.is_bool() ? v.as_bool() : v.as_int();
      if (precision >= 0) return Value::integer(i);
      double r = round_float(static_cast<double>(i), precision);
      return Value::integer(static_cast<int64_t>(r));
    }
    return Value::number(round_float(v.as_float(), precision));
  }
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.to_double() * scale;
  double r = method == "ceil" ? std::ceil(x) : std::floor(x);
  return Value::number(r / scale);
}

// ---- sequences ----

Result<Value> f_length(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  ARCH_TRY(int64_t n, length(v));
  return Value::integer(n);
}

Result<Value> f_list(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  ARCH_TRY(auto items, iterate(v));
  return Value::list(std::move(items));
}

Result<Value> f_first(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  if (v.is_iterator()) {
    IteratorData& it = v.iter();
    if (it.pos < it.items.size()) return it.items[it.pos++];
  } else if (v.is_string()) {  // the first character, without a list of them all
    const std::string& s = v.as_string();
    if (!s.empty()) return str(s.substr(0, decode_utf8(s, 0).len));
  } else {
    ARCH_TRY(auto items, iterate(v));
    if (!items.empty()) return items.front();
  }
  return Value::undefined("No first item, sequence was empty.");
}

Result<Value> f_last(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  if (!v.is_undefined() && !v.is_string() && !v.is_list() && !v.is_dict())
    return error("'" + type_name(v) + "' object is not reversible");
  if (v.is_string()) {  // the last character, without a list of them all
    const std::string& s = v.as_string();
    if (s.empty()) return Value::undefined("No last item, sequence was empty.");
    size_t i = s.size() - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80 && s.size() - i < 4) --i;
    // A byte that does not start the character decode_utf8 reads there is one of its own.
    if (i + decode_utf8(s, i).len != s.size()) i = s.size() - 1;
    return str(s.substr(i));
  }
  ARCH_TRY(auto items, iterate(v));
  if (!items.empty()) return items.back();
  return Value::undefined("No last item, sequence was empty.");
}

Result<Value> f_reverse(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  if (v.is_string()) {  // characters reversed, without a list of them
    const std::string& s = v.as_string();
    std::vector<size_t> off = char_offsets(s);
    std::string out;
    out.reserve(s.size());
    for (size_t k = off.size() - 1; k > 0; --k) out.append(s, off[k - 1], off[k] - off[k - 1]);
    return str(std::move(out));
  }
  if (v.is_iterator()) {  // not reversible: jinja2 falls back to a reversed list
    ARCH_TRY(auto items, iterate(v));
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (!v.is_undefined() && !v.is_list() && !v.is_dict()) return error(w + ": argument must be iterable");
  ARCH_TRY(auto items, iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::iterator(std::move(items), v.is_list() ? (v.is_tuple() ? "reversed" : "list_reverseiterator")
                                           : v.is_dict() ? "dict_reversekeyiterator"
                                                         : "reversed");
}

Result<Value> f_join(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"d", str("")}, {"attribute", none()}}));
  ARCH_TRY(auto items, iterate(v));
  std::vector<Value> parts = attribute_parts(p[1]);
  ARCH_TRY(std::string sep, to_str(p[0]));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    ARCH_TRY(Value item, get_path(items[i], parts));
    ARCH_TRY(std::string piece, to_str(item));
    ARCH_TRY_STATUS(check_text_sum(out.size(), (i ? sep.size() : 0) + piece.size(),
                                   "the size in bytes of the string " + w + " makes"));
    if (i) out += sep;
    out += piece;
  }
  return str(std::move(out));
}

Result<Value> f_default(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"default_value", str("")}, {"boolean", boolean(false)}}));
  if (v.is_undefined() || (truthy(p[1]) && !truthy(v))) return p[0];
  return v;
}

Result<Value> f_items(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {}));
  if (v.is_undefined()) return Value::iterator({});
  if (!v.is_dict()) return error("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict().items) out.push_back(Value::list({k, x}, true));
  return Value::iterator(std::move(out));
}

Result<Value> f_dictsort(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"case_sensitive", boolean(false)}, {"by", str("key")}, {"reverse", boolean(false)}}));
  ARCH_TRY(std::string by, str_arg(w, "by", p[1]));
  if (by != "key" && by != "value") return error("You can only sort by either \"key\" or \"value\"");
  if (v.is_undefined()) return undefined_error(v);
  if (!v.is_dict()) return error("'" + type_name(v) + "' object has no attribute 'items'");
  std::vector<Value> items, keys;
  HeldStrings held(w);
  for (const auto& [k, x] : v.dict().items) {
    items.push_back(Value::list({k, x}, true));
    const Value& key = by == "key" ? k : x;
    keys.push_back(truthy(p[0]) ? key : ignore_case(key));
    ARCH_TRY_STATUS(held.add(keys.back(), key));
  }
  ARCH_TRY_STATUS(sort_by_keys(items, std::move(keys), truthy(p[2])));
  return Value::list(std::move(items));
}

Result<Value> f_sort(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"reverse", boolean(false)}, {"case_sensitive", boolean(false)}, {"attribute", none()}}));
  ARCH_TRY(auto items, iterate(v));
  // "a,b": sort by several attributes.
  std::vector<std::vector<Value>> getters;
  if (p[2].is_string()) {
    for (auto& part : py_split(p[2].as_string(), std::string(","), -1))
      getters.push_back(attribute_parts(str(part)));
  } else {
    getters.push_back(attribute_parts(p[2]));
  }
  std::vector<Value> keys;
  HeldStrings held(w);
  for (const Value& item : items) {
    std::vector<Value> key;
    for (const auto& parts : getters) {
      ARCH_TRY(Value k, get_path(item, parts));
      key.push_back(truthy(p[1]) ? k : ignore_case(k));
      ARCH_TRY_STATUS(held.add(key.back(), k));
    }
    keys.push_back(key.size() == 1 ? key[0] : Value::list(std::move(key)));
  }
  ARCH_TRY_STATUS(sort_by_keys(items, std::move(keys), truthy(p[0])));
  return Value::list(std::move(items));
}

Result<Value> f_unique(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"case_sensitive", boolean(false)}, {"attribute", none()}}));
  ARCH_TRY(auto items, iterate(v));
  std::vector<Value> parts = attribute_parts(p[1]), seen, out;
  for (const Value& item : items) {
    // Each item is compared with those kept so far: that work counts as
    // iterations, so a long list cannot make it quadratic for minutes.
    ARCH_TRY_STATUS(count_iterations(seen.size() + 1, "the loop iterations of this render (" + w + " comparing items)"));
    ARCH_TRY(Value key, get_path(item, parts));
    if (!truthy(p[0])) key = ignore_case(key);
    if (!hashable(key)) return error("unhashable type: '" + type_name(key) + "'");
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::iterator(std::move(out));
}

Result<Value> min_or_max(const Value& v, const CallArgs& a, const std::string& w, bool max) {
  ARCH_TRY(auto p, bind_args(w, a, {{"case_sensitive", boolean(false)}, {"attribute", none()}}));
  ARCH_TRY(auto items, iterate(v));
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  std::vector<Value> parts = attribute_parts(p[1]);
  size_t best = 0;
  Value best_key;
  for (size_t i = 0; i < items.size(); ++i) {
    ARCH_TRY(Value key, get_path(items[i], parts));
    if (!truthy(p[0])) key = ignore_case(key);
    if (i == 0) {
      best_key = key;
      continue;
    }
    ARCH_TRY(int c, compare(key, best_key));
    if (max ? c > 0 : c < 0) {
      best = i;
      best_key = key;
    }
  }
  return items[best];
}

Result<Value> f_sum(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"attribute", none()}, {"start", Value::integer(0)}}));
  ARCH_TRY(auto items, iterate(v));
  if (p[1].is_string()) return error("sum() can't sum strings [use ''.join(seq) instead]");
  std::vector<Value> parts = attribute_parts(p[0]);
  Value total = p[1];
  for (const Value& item : items) {
    ARCH_TRY(Value x, get_path(item, parts));
    ARCH_TRY(total, binary_op("+", total, x));
  }
  return total;
}

Result<Value> f_map(const Value& v, const CallArgs& a, const std::string& w) {
  if (!truthy(v)) return Value::iterator({});
  ARCH_TRY(auto items, iterate(v));
  std::vector<Value> out;
  if (a.positional.empty()) {
    const Value* attribute = nullptr;
    const Value* dflt = nullptr;
    for (const auto& [k, x] : a.keyword) {
      if (k == "attribute") attribute = &x;
      else if (k == "default") dflt = &x;
      else return error("Unexpected keyword argument '" + k + "'");
    }
    if (!attribute) return error("map requires a filter argument");
    std::vector<Value> parts = attribute_parts(*attribute);
    bool use_default = dflt && !dflt->is_none();
    for (const Value& item : items) {
      ARCH_TRY(Value x, get_path(item, parts, use_default ? dflt : nullptr));
      out.push_back(std::move(x));
    }
    return Value::iterator(std::move(out));
  }
  ARCH_TRY(std::string name, str_arg(w, "name", a.positional[0]));
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  HeldStrings held(w);
  for (const Value& item : items) {
    ARCH_TRY(Value x, apply_filter(name, item, rest));
    ARCH_TRY_STATUS(held.add(x, item));
    out.push_back(std::move(x));
  }
  return Value::iterator(std::move(out));
}

Result<Value> select_or_reject(const Value& v, const CallArgs& a, const std::string& w, bool select, bool by_attr) {
  if (!truthy(v)) return Value::iterator({});
  ARCH_TRY(auto items, iterate(v));
  size_t off = 0;
  std::vector<Value> parts;
  if (by_attr) {
    if (a.positional.empty()) return error("Missing parameter for attribute name");
    parts = attribute_parts(a.positional[0]);
    off = 1;
  }
  std::optional<std::string> test;
  CallArgs rest;
  if (a.positional.size() > off) {
    ARCH_TRY(test, str_arg(w, "test", a.positional[off]));
    rest.positional.assign(a.positional.begin() + static_cast<std::ptrdiff_t>(off) + 1, a.positional.end());
    rest.keyword = a.keyword;
  }
  std::vector<Value> out;
  for (const Value& item : items) {
    ARCH_TRY(Value x, get_path(item, parts));
    bool ok;
    if (test) {
      ARCH_TRY(ok, apply_test(*test, x, rest));
    } else {
      ok = truthy(x);
    }
    if (ok == select) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_batch(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"linecount", std::nullopt}, {"fill_with", none()}}));
  ARCH_TRY(int64_t n, int_arg(w, "linecount", p[0]));
  if (n <= 0) return error(w + ": linecount must be positive");
  ARCH_TRY(auto items, iterate(v));
  std::vector<Value> out, tmp;
  for (const Value& item : items) {
    if (static_cast<int64_t>(tmp.size()) == n) {
      out.push_back(Value::list(std::move(tmp)));
      tmp.clear();
    }
    tmp.push_back(item);
  }
  if (!tmp.empty()) {
    if (!p[1].is_none()) {
      ARCH_TRY_STATUS(check_items(uint64_t(n), "the last batch " + w + " fills"));
      while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(p[1]);
    }
    out.push_back(Value::list(std::move(tmp)));
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_slice(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"slices", std::nullopt}, {"fill_with", none()}}));
  ARCH_TRY(int64_t slices, int_arg(w, "slices", p[0]));
  if (slices <= 0) return error(w + ": slices must be positive");
  ARCH_TRY_STATUS(check_items(uint64_t(slices), "the list of slices " + w + " makes"));
  ARCH_TRY(auto seq, iterate(v));
  int64_t len = static_cast<int64_t>(seq.size()), per = len / slices, extra = len % slices, offset = 0;
  std::vector<Value> out;
  for (int64_t s = 0; s < slices; ++s) {
    int64_t start = offset + s * per;
    if (s < extra) ++offset;
    int64_t end = offset + (s + 1) * per;
    std::vector<Value> tmp(seq.begin() + start, seq.begin() + end);
    if (!p[1].is_none() && s >= extra) tmp.push_back(p[1]);
    out.push_back(Value::list(std::move(tmp)));
  }
  return Value::iterator(std::move(out));
}

Result<Value> f_attr(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"name", std::nullopt}}));
  ARCH_TRY(std::string name, str_arg(w, "name", p[0]));
  if (v.is_undefined()) return undefined_error(v);
  if (!name.empty() && name[0] == '_') return Value::undefined("access to attribute '" + name + "' is unsafe.");
  if (auto x = python_attribute(v, name)) return *x;
  return Value::undefined(object_description(v) + " has no attribute " + py_repr_string(name));
}

Result<Value> f_tojson(const Value& v, const CallArgs& a, const std::string& w) {
  ARCH_TRY(auto p, bind_args(w, a, {{"ensure_ascii", boolean(false)}, {"indent", none()},
                                    {"separators", none()}, {"sort_keys", boolean(false)}}));
  JsonDumpOptions o;
  o.ensure_ascii = truthy(p[0]);
  if (p[1].is_string()) {
    o.indent = p[1].as_string();
  } else if (!p[1].is_none()) {
    ARCH_TRY(int64_t n, int_arg(w, "indent", p[1]));
    ARCH_TRY_STATUS(check_text(uint64_t(std::max<int64_t>(0, n)), "the size in bytes of the indentation " + w + " makes"));
    o.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
  }
  if (!p[2].is_none()) {
    if (!p[2].is_list() || p[2].list().items.size() != 2 || !p[2].list().items[0].is_string() ||
        !p[2].list().items[1].is_string())
      return error(w + ": separators must be a pair of strings");
    o.item_separator = p[2].list().items[0].as_string();
    o.key_separator = p[2].list().items[1].as_string();
  }
  o.sort_keys = truthy(p[3]);
  ARCH_TRY(std::string s, json_dumps(v, o));
  return str(std::move(s));
}

const std::map<std::string, FilterFn, std::less<>>& filters() {
  static const std::map<std::string, FilterFn, std::less<>> f = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_case<py_capitalize>},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"forceescape", f_escape},
      {"format", f_format},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_case<py_lower>},
      {"map", f_map},
      {"max", [](const Value& v, const CallArgs& a, const std::string& w) { return min_or_max(v, a, w, true); }},
      {"min", [](const Value& v, const CallArgs& a, const std::string& w) { return min_or_max(v, a, w, false); }},
      {"reject", [](const Value& v, const CallArgs& a, const std::string& w) { return select_or_reject(v, a, w, false, false); }},
      {"rejectattr", [](const Value& v, const CallArgs& a, const std::string& w) { return select_or_reject(v, a, w, false, true); }},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", [](const Value& v, const CallArgs& a, const std::string& w) { return select_or_reject(v, a, w, true, false); }},
      {"selectattr", [](const Value& v, const CallArgs& a, const std::string& w) { return select_or_reject(v, a, w, true, true); }},
      {"slice", f_slice},
      {"sort", f_sort},
      {"string", f_string},
      {"sum", f_sum},
      {"title", f_case<jinja_title>},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"unique", f_unique},
      {"upper", f_case<py_upper>},
      {"wordcount", f_wordcount},
  };
  return f;
}

const std::set<std::string, std::less<>> kNotImplemented = {
    "filesizeformat", "groupby", "pprint", "random", "striptags", "truncate",
    "urlencode",      "urlize",  "wordwrap", "xmlattr"};

}  // namespace

Support filter_support(std::string_view name) {
  if (filters().count(name)) return Support::Yes;
  if (kNotImplemented.count(name)) return Support::NotImplemented;
  return Support::Unknown;
}

Result<Value> apply_filter(const std::string& name, const Value& value, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) {
    if (kNotImplemented.count(name)) return error("filter '" + name + "' is not supported");
    return error("unknown filter '" + name + "'");
  }
  return it->second(value, args, "filter '" + name + "'");
}

}  // namespace arch::jinja

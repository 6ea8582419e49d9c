#include "importer/text/chat_template/str_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "importer/text/chat_template/access.h"
#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

struct Spec {
  std::string fill = " ";
  char align = 0;  // < > ^ =
  char sign = '-';
  bool alternate = false;
  int64_t width = 0;
  char grouping = 0;
  std::optional<int64_t> precision;
  char type = 0;
};

Result<Spec> parse_spec(const std::string& s) {
  Spec sp;
  std::vector<size_t> off = char_offsets(s);
  size_t n = off.size() - 1, i = 0;
  auto ch = [&](size_t k) -> char { return k < n && off[k + 1] - off[k] == 1 ? s[off[k]] : '\0'; };
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  if (n >= 2 && is_align(ch(1))) {
    sp.fill = s.substr(off[0], off[1] - off[0]);
    sp.align = ch(1);
    i = 2;
  } else if (n >= 1 && is_align(ch(0))) {
    sp.align = ch(0);
    i = 1;
  }
  if (ch(i) == '+' || ch(i) == '-' || ch(i) == ' ') sp.sign = ch(i++);
  if (ch(i) == '#') { sp.alternate = true; ++i; }
  if (ch(i) == '0') {
    if (!sp.align) { sp.fill = "0"; sp.align = '='; }
    ++i;
  }
  // Widths and precisions stay at 10**17 past it: no overflow, and a width
  // that large is refused below.
  constexpr int64_t big = 100000000000000000ll;
  while (ch(i) >= '0' && ch(i) <= '9') sp.width = std::min(big, sp.width * 10 + (ch(i++) - '0'));
  ARCH_TRY_STATUS(check_text(uint64_t(sp.width), "the width of a format field, in bytes"));
  if (ch(i) == ',' || ch(i) == '_') sp.grouping = ch(i++);
  if (ch(i) == '.') {
    ++i;
    int64_t p = 0;
    bool any = false;
    while (ch(i) >= '0' && ch(i) <= '9') { p = std::min(big, p * 10 + (ch(i++) - '0')); any = true; }
    if (!any) return error("Format specifier missing precision");
    sp.precision = p;
  }
  if (i < n) sp.type = ch(i++);
  if (i != n) return error("Invalid format specifier '" + s + "'");
  return sp;
}

std::string group_digits(const std::string& digits, char sep) {
  std::string out;
  int count = 0;
  for (size_t k = digits.size(); k-- > 0;) {
    if (count && count % 3 == 0) out.insert(out.begin(), sep);
    out.insert(out.begin(), digits[k]);
    ++count;
  }
  return out;
}

// The width was checked when the spec was read; a fill character may take
// up to four bytes.
std::string pad(const std::string& sign, const std::string& body, const Spec& sp, char default_align) {
  char align = sp.align ? sp.align : default_align;
  int64_t len = static_cast<int64_t>(char_count(sign) + char_count(body));
  if (len >= sp.width) return sign + body;
  int64_t missing = sp.width - len;
  auto fill = [&](int64_t k) {
    std::string f;
    for (int64_t j = 0; j < k; ++j) f += sp.fill;
    return f;
  };
  switch (align) {
    case '<': return sign + body + fill(missing);
    case '^': return fill(missing / 2) + sign + body + fill(missing - missing / 2);
    case '=': return sign + fill(missing) + body;
    default: return fill(missing) + sign + body;
  }
}

Result<std::string> format_number(double d, bool is_int, int64_t iv, const Spec& sp) {
  char type = sp.type;
  std::string sign = "", body;
  bool negative = is_int ? iv < 0 : std::signbit(d);
  if (negative) sign = "-";
  else if (sp.sign == '+') sign = "+";
  else if (sp.sign == ' ') sign = " ";
  if (is_int && (type == 0 || type == 'd' || type == 'n' || type == 'b' || type == 'o' ||
                 type == 'x' || type == 'X' || type == 'c')) {
    if (sp.precision) return error("Precision not allowed in integer format specifier");
    uint64_t mag = negative ? 0 - static_cast<uint64_t>(iv) : static_cast<uint64_t>(iv);
    if (type == 'c') {
      append_utf8(body, static_cast<uint32_t>(iv));
      return pad("", body, sp, '<');
    }
    int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
    const char* digits = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
      body.insert(body.begin(), digits[mag % base]);
      mag /= base;
    } while (mag);
    if (sp.grouping) body = group_digits(body, sp.grouping);
    if (sp.alternate && base != 10) sign += base == 2 ? "0b" : base == 8 ? "0o" : (type == 'X' ? "0X" : "0x");
    return pad(sign, body, sp, '>');
  }
  double mag = std::fabs(d);
  if (!std::isfinite(mag)) {
    body = std::isnan(mag) ? "nan" : "inf";
    if (type == 'F' || type == 'E' || type == 'G') body = std::isnan(mag) ? "NAN" : "INF";
    return pad(sign, body, sp, '>');
  }
  char buf[512];
  int prec = static_cast<int>(sp.precision.value_or(6));
  if (prec > 100) prec = 100;
  switch (type) {
    case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
      std::string f = std::string("%") + (sp.alternate ? "#" : "") + ".*" + type;
      std::snprintf(buf, sizeof buf, f.c_str(), prec, mag);
      body = buf;
      break;
    }
    case '%':
      std::snprintf(buf, sizeof buf, "%.*f", prec, mag * 100);
      body = std::string(buf) + "%";
      break;
    case 0:
      if (!sp.precision) {
        body = is_int ? std::to_string(negative ? 0 - static_cast<uint64_t>(iv) : static_cast<uint64_t>(iv))
                      : py_float_repr(mag);
      } else {
        std::snprintf(buf, sizeof buf, "%.*g", prec == 0 ? 1 : prec, mag);
        body = buf;
        if (body.find_first_of(".e") == std::string::npos) body += ".0";
      }
      break;
    default:
      return error(std::string("Unknown format code '") + type + "' for object of type '" +
                   (is_int ? "int" : "float") + "'");
  }
  if (sp.grouping) {
    size_t end = body.find_first_of(".e%");
    if (end == std::string::npos) end = body.size();
    body = group_digits(body.substr(0, end), sp.grouping) + body.substr(end);
  }
  return pad(sign, body, sp, '>');
}

}  // namespace

Result<std::string> py_format_value(const Value& v, const std::string& spec) {
  if (v.is_int() || (v.is_bool() && !spec.empty()) || v.is_float()) {
    ARCH_TRY(Spec sp, parse_spec(spec));
    if (v.is_float()) return format_number(v.as_float(), false, 0, sp);
    int64_t iv = v.is_bool() ? v.as_bool() : v.as_int();
    char t = sp.type;
    if (t == 'e' || t == 'E' || t == 'f' || t == 'F' || t == 'g' || t == 'G' || t == '%')
      return format_number(static_cast<double>(iv), false, 0, sp);
    if (t == 's') return error("Unknown format code 's' for object of type 'int'");
    return format_number(static_cast<double>(iv), true, iv, sp);
  }
  if (v.is_string()) {
    ARCH_TRY(Spec sp, parse_spec(spec));
    if (sp.type && sp.type != 's')
      return error(std::string("Unknown format code '") + sp.type + "' for object of type 'str'");
    if (sp.sign != '-' || sp.align == '=') return error("Sign not allowed in string format specifier");
    std::string s = v.as_string();
    if (sp.precision) {
      std::vector<size_t> off = char_offsets(s);
      if (static_cast<size_t>(*sp.precision) + 1 < off.size()) s = s.substr(0, off[*sp.precision]);
    }
    return pad("", s, sp, '<');
  }
  if (!spec.empty())
    return error("unsupported format string passed to " + type_name(v) + ".__format__");
  return to_str(v);
}

namespace {

// A field index or key written in digits; nullopt past int64 (Python's int
// has no bound, but no sequence is that long).
std::optional<int64_t> digits_value(const std::string& s) {
  int64_t v = 0;
  for (char c : s)
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, c - '0', &v)) return std::nullopt;
  return v;
}

// Automatic field numbering, shared with the fields nested in format specs
// ("{:{}}" takes the value, then the width).
struct Numbering {
  size_t auto_index = 0;
  bool used_auto = false, used_manual = false;
};

// `level`: Python allows a replacement field inside a format spec, not one
// inside that ("Max string recursion exceeded"), so the recursion is bounded.
Result<std::string> str_format(const std::string& fmt, const CallArgs& args, int level, Numbering& numbering) {
  if (level > 2) return error("Max string recursion exceeded");
  std::string out;
  size_t& auto_index = numbering.auto_index;
  bool &used_auto = numbering.used_auto, &used_manual = numbering.used_manual;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') { out += '}'; ++i; continue; }
      return error("Single '}' encountered in format string");
    }
    if (c != '{') { out += c; continue; }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') { out += '{'; ++i; continue; }
    // Find the matching '}' (one level of nested fields in the spec).
    size_t depth = 1, j = i + 1;
    for (; j < fmt.size() && depth; ++j) {
      if (fmt[j] == '{') ++depth;
      else if (fmt[j] == '}') --depth;
    }
    if (depth) return error("expected '}' before end of string");
    std::string field = fmt.substr(i + 1, j - i - 2);
    i = j - 1;
    std::string spec, conv;
    size_t colon = std::string::npos, bang = std::string::npos;
    for (size_t k = 0, bracket = 0; k < field.size(); ++k) {
      if (field[k] == '[') ++bracket;
      else if (field[k] == ']' && bracket) --bracket;
      else if (!bracket && field[k] == '!' && bang == std::string::npos && colon == std::string::npos) bang = k;
      else if (!bracket && field[k] == ':') { colon = k; break; }
    }
    if (colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    if (bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field = field.substr(0, bang);
      if (conv.size() != 1 || (conv != "r" && conv != "s" && conv != "a"))
        return error("Unknown conversion specifier " + conv);
    }
    // arg_name ( "." attr | "[" key "]" )*
    size_t k = 0;
    while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
    std::string first = field.substr(0, k);
    Value obj;
    if (first.empty()) {
      if (used_manual) return error("cannot switch from manual field specification to automatic field numbering");
      used_auto = true;
      if (auto_index >= args.positional.size())
        return error("Replacement index " + std::to_string(auto_index) + " out of range for positional args tuple");
      obj = args.positional[auto_index++];
    } else if (first.find_first_not_of("0123456789") == std::string::npos) {
      if (used_auto) return error("cannot switch from automatic field numbering to manual field specification");
      used_manual = true;
      std::optional<int64_t> idx = digits_value(first);
      if (!idx || uint64_t(*idx) >= args.positional.size())
        return error("Replacement index " + first + " out of range for positional args tuple");
      obj = args.positional[size_t(*idx)];
    } else {
      bool found = false;
      for (const auto& [name, v] : args.keyword)
        if (name == first) { obj = v; found = true; }
      if (!found) return error("KeyError: " + py_repr_string(first));
    }
    while (k < field.size()) {
      if (field[k] == '.') {
        size_t e = k + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
        ARCH_TRY(obj, get_attr(obj, field.substr(k + 1, e - k - 1)));
        k = e;
      } else {
        size_t e = field.find(']', k);
        if (e == std::string::npos) return error("Missing ']' in format string");
        std::string key = field.substr(k + 1, e - k - 1);
        bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        std::optional<int64_t> index = digits ? digits_value(key) : std::nullopt;
        if (digits && !index) return error("IndexError: cannot fit 'int' into an index-sized integer");
        Value kv = digits ? Value::integer(*index) : Value::string(key);
        ARCH_TRY(obj, get_item(obj, kv));
        k = e + 1;
      }
    }
    if (conv == "r" || conv == "a") {
      ARCH_TRY(std::string shown, repr(obj));
      obj = Value::string(std::move(shown));
    } else if (conv == "s") {
      ARCH_TRY(std::string shown, to_str(obj));
      obj = Value::string(std::move(shown));
    }
    if (spec.find('{') != std::string::npos) {
      ARCH_TRY(spec, str_format(spec, args, level + 1, numbering));
    }
    ARCH_TRY(std::string piece, py_format_value(obj, spec));
    ARCH_TRY_STATUS(check_text_sum(out.size(), piece.size(), "the size in bytes of the string str.format() makes"));
    out += piece;
  }
  return out;
}

}  // namespace

Result<std::string> py_str_format(const std::string& fmt, const CallArgs& args) {
  Numbering numbering;
  return str_format(fmt, args, 1, numbering);
}

}  // namespace arch::jinja

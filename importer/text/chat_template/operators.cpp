#include "importer/text/chat_template/operators.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

bool is_intlike(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t int_of(const Value& v) { return v.is_bool() ? v.as_bool() : v.as_int(); }

Error unsupported(const std::string& op, const Value& a, const Value& b) {
  return error("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" +
               type_name(b) + "'");
}

Error overflow() { return error("integer overflow (the value does not fit in 64 bits)"); }

// The bytes of the strings a list holds directly.
uint64_t string_bytes(const std::vector<Value>& items) {
  uint64_t n = 0;
  for (const Value& v : items)
    if (v.is_string()) n += v.as_string().size();
  return n;
}

Result<Value> repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    ARCH_TRY_STATUS(check_text_repeat(s.size(), uint64_t(n), "the size in bytes of the string '*' makes"));
    std::string out;
    out.reserve(s.size() * size_t(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value::string(std::move(out));
  }
  const auto& items = seq.list().items;
  uint64_t count, text;
  if (__builtin_mul_overflow(uint64_t(items.size()), uint64_t(n), &count)) count = UINT64_MAX;
  if (__builtin_mul_overflow(string_bytes(items), uint64_t(n), &text)) text = UINT64_MAX;
  ARCH_TRY_STATUS(check_list(count, text, "the " + type_name(seq) + " '*' makes"));
  std::vector<Value> out;
  out.reserve(count);
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.is_tuple());
}

// Two strings joined, sized first and copied once.
Result<Value> joined(const std::string& a, const std::string& b, const std::string& what) {
  ARCH_TRY_STATUS(check_text_sum(a.size(), b.size(), what));
  std::string out;
  out.reserve(a.size() + b.size());
  out += a;
  out += b;
  return Value::string(std::move(out));
}

// a ~ b: both printed, then joined; strings are read where they are.
Result<Value> concat(const Value& a, const Value& b) {
  std::string printed_a, printed_b;
  if (!a.is_string()) {
    ARCH_TRY(printed_a, to_str(a));
  }
  if (!b.is_string()) {
    ARCH_TRY(printed_b, to_str(b));
  }
  return joined(a.is_string() ? a.as_string() : printed_a, b.is_string() ? b.as_string() : printed_b,
                "the size in bytes of the string '~' makes");
}

// Python's float divmod.
void float_divmod(double vx, double wx, double* floordiv, double* mod) {
  double m = std::fmod(vx, wx);
  double div = (vx - m) / wx;
  if (m != 0) {
    if ((wx < 0) != (m < 0)) {
      m += wx;
      div -= 1.0;
    }
  } else {
    m = std::copysign(0.0, wx);
  }
  double fd;
  if (div != 0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, vx / wx);
  }
  *floordiv = fd;
  *mod = m;
}

}  // namespace

Result<Value> binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return concat(a, b);
  if (a.is_undefined()) return undefined_error(a);
  if (op == "%" && a.is_string()) {
    ARCH_TRY(std::string s, percent_format(a.as_string(), b));
    return Value::string(std::move(s));
  }
  if (b.is_undefined()) return undefined_error(b);
  // range and dict views have no + or *.
  if ((a.is_list() && !a.list().view.empty()) || (b.is_list() && !b.list().view.empty())) {
    if (op == "+" || op == "*") return unsupported(op, a, b);
  }
  bool nums = a.is_number() && b.is_number();
  bool ints = is_intlike(a) && is_intlike(b);
  if (op == "+") {
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(int_of(a), int_of(b), &r)) return overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.to_double() + b.to_double());
    if (a.is_string() && b.is_string())
      return joined(a.as_string(), b.as_string(), "the size in bytes of the string '+' makes");
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      ARCH_TRY_STATUS(check_list(a.list().items.size() + b.list().items.size(),
                                 string_bytes(a.list().items) + string_bytes(b.list().items),
                                 "the " + type_name(a) + " '+' makes"));
      std::vector<Value> items;
      items.reserve(a.list().items.size() + b.list().items.size());
      items.insert(items.end(), a.list().items.begin(), a.list().items.end());
      items.insert(items.end(), b.list().items.begin(), b.list().items.end());
      return Value::list(std::move(items), a.is_tuple());
    }
    if (a.is_string() || a.is_list())
      return error("can only concatenate " + type_name(a) + " (not \"" + type_name(b) + "\") to " +
                   type_name(a));
    return unsupported("+", a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(int_of(a), int_of(b), &r)) return overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.to_double() - b.to_double());
    return unsupported("-", a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(int_of(a), int_of(b), &r)) return overflow();
      return Value::integer(r);
    }
    if (nums) return Value::number(a.to_double() * b.to_double());
    if ((a.is_string() || a.is_list()) && is_intlike(b)) return repeat(a, int_of(b));
    if ((b.is_string() || b.is_list()) && is_intlike(a)) return repeat(b, int_of(a));
    if (a.is_string() || a.is_list() || b.is_string() || b.is_list())
      return error("can't multiply sequence by non-int of type '" +
                   type_name(a.is_string() || a.is_list() ? b : a) + "'");
    return unsupported("*", a, b);
  }
  if (op == "/") {
    if (!nums) return unsupported("/", a, b);
    if (b.to_double() == 0) return error("division by zero");
    return Value::number(a.to_double() / b.to_double());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) {
      ARCH_TRY(std::string s, percent_format(a.as_string(), b));
      return Value::string(std::move(s));
    }
    if (!nums) return unsupported(op, a, b);
    if (ints) {
      int64_t x = int_of(a), y = int_of(b);
      if (y == 0) return error(op == "//" ? "integer division or modulo by zero" : "integer modulo by zero");
      if (x == INT64_MIN && y == -1) {
        if (op == "//") return overflow();
        return Value::integer(0);
      }
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        q -= 1;
        r += y;
      }
      return Value::integer(op == "//" ? q : r);
    }
    double y = b.to_double();
    if (y == 0) return error("float division by zero");
    double fd, m;
    float_divmod(a.to_double(), y, &fd, &m);
    return Value::number(op == "//" ? fd : m);
  }
  if (op == "**") {
    if (ints && int_of(b) >= 0) {
      int64_t base = int_of(a), e = int_of(b), r = 1;
      while (e > 0) {
        if (e & 1)
          if (__builtin_mul_overflow(r, base, &r)) return overflow();
        e >>= 1;
        if (e > 0 && __builtin_mul_overflow(base, base, &base)) return overflow();
      }
      return Value::integer(r);
    }
    if (nums) {
      if (a.to_double() == 0 && b.to_double() < 0)
        return error("0.0 cannot be raised to a negative power");
      if (a.to_double() < 0 && std::trunc(b.to_double()) != b.to_double())
        return error("a negative number raised to a fractional power is complex, which is not supported");
      return Value::number(std::pow(a.to_double(), b.to_double()));
    }
    return unsupported("** or pow()", a, b);
  }
  return error("unknown operator '" + op + "'");
}

Result<Value> negate(const Value& a) {
  if (a.is_undefined()) return undefined_error(a);
  if (is_intlike(a)) {
    if (int_of(a) == INT64_MIN) return overflow();
    return Value::integer(-int_of(a));
  }
  if (a.is_float()) return Value::number(-a.as_float());
  return error("bad operand type for unary -: '" + type_name(a) + "'");
}

Result<Value> unary_plus(const Value& a) {
  if (a.is_undefined()) return undefined_error(a);
  if (is_intlike(a)) return Value::integer(int_of(a));
  if (a.is_float()) return a;
  return error("bad operand type for unary +: '" + type_name(a) + "'");
}

Result<bool> compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  auto c = compare(a, b);
  if (!c.ok()) {
    std::string m = c.error().message;
    if (m.rfind("'<'", 0) == 0) m = "'" + op + "'" + m.substr(3);
    return error(m);
  }
  if (a.is_float() || b.is_float()) {
    if ((a.is_float() && std::isnan(a.as_float())) || (b.is_float() && std::isnan(b.as_float())))
      return false;
  }
  if (op == "<") return *c < 0;
  if (op == "<=") return *c <= 0;
  if (op == ">") return *c > 0;
  if (op == ">=") return *c >= 0;
  return error("unknown comparison '" + op + "'");
}

Result<bool> contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::String:
      if (!item.is_string())
        return error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::List:
      for (const Value& v : container.list().items)
        if (equals(v, item)) return true;
      return false;
    case Value::Kind::Dict:
      if (!hashable(item)) return error("unhashable type: '" + type_name(item) + "'");
      return container.dict().find(item) != nullptr;
    case Value::Kind::Iterator: {
      IteratorData& it = container.iter();
      while (it.pos < it.items.size())
        if (equals(it.items[it.pos++], item)) return true;
      return false;
    }
    case Value::Kind::Undefined: return false;
    default: return error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

namespace {

// A run of digits at fmt[i]; it stays at 10**18 past that, so no digit
// string overflows (and any such width is over the limit).
uint64_t read_digits(const std::string& fmt, size_t& i) {
  constexpr uint64_t kMost = 1000000000000000000ull;
  uint64_t v = 0;
  for (; i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9'; ++i) v = std::min(kMost, v * 10 + uint64_t(fmt[i] - '0'));
  return v;
}

// snprintf into a string of the size it needs.
template <class T>
Result<std::string> c_format(const std::string& spec, T value) {
  int n = std::snprintf(nullptr, 0, spec.c_str(), value);
  if (n < 0) return error("format width or precision is too large");
  std::string out(size_t(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.resize(size_t(n));
  return out;
}

}  // namespace

Result<std::string> percent_format(const std::string& fmt, const Value& args) {
  std::vector<Value> positional;
  const DictData* named = nullptr;
  if (args.is_tuple()) positional = args.list().items;
  else positional.push_back(args);
  if (args.is_dict()) named = &args.dict();
  const std::string what = "the size in bytes of the string '%' formats";
  size_t next_arg = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out += fmt[i];
      continue;
    }
    if (++i >= fmt.size()) return error("incomplete format");
    Value arg;
    bool have_arg = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos) return error("incomplete format key");
      if (!named) return error("format requires a mapping");
      const Value* v = named->find(Value::string(fmt.substr(i + 1, close - i - 1)));
      if (!v) return error("KeyError: " + py_repr_string(fmt.substr(i + 1, close - i - 1)));
      arg = *v;
      have_arg = true;
      i = close + 1;
    }
    std::string flags;
    while (i < fmt.size() && std::string("-+ #0").find(fmt[i]) != std::string::npos) flags += fmt[i++];
    auto take = [&]() -> Result<Value> {
      if (next_arg >= positional.size()) return error("not enough arguments for format string");
      return positional[next_arg++];
    };
    uint64_t width = 0;
    std::optional<uint64_t> precision;
    if (i < fmt.size() && fmt[i] == '*') {
      ARCH_TRY(Value w, take());
      if (!w.is_int()) return error("* wants int");
      if (w.as_int() < 0) flags += '-';  // Python: a negative * width left-justifies
      width = w.as_int() < 0 ? 0 - uint64_t(w.as_int()) : uint64_t(w.as_int());
      ++i;
    }
    width = std::max(width, read_digits(fmt, i));
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      precision = read_digits(fmt, i);
    }
    ARCH_TRY_STATUS(check_text(width, "the width of a '%' conversion, in bytes"));
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) return error("incomplete format");
    char conv = fmt[i];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!have_arg) {
      ARCH_TRY(arg, take());
    }
    if (arg.is_undefined() && conv != 's') return undefined_error(arg);
    std::string piece;
    std::string width_text = width ? std::to_string(width) : "";
    std::string precision_text = precision ? "." + std::to_string(*precision) : "";
    switch (conv) {
      case 's': case 'r': case 'a': {
        if (conv == 's') {
          ARCH_TRY(piece, to_str(arg));
        } else {
          ARCH_TRY(piece, repr(arg));
        }
        if (precision) {
          std::vector<size_t> off = char_offsets(piece);
          if (*precision + 1 < off.size()) piece = piece.substr(0, off[*precision]);
        }
        size_t len = char_count(piece);
        if (len < width) {
          std::string pad(width - len, ' ');
          piece = flags.find('-') != std::string::npos ? piece + pad : pad + piece;
        }
        break;
      }
      case 'd': case 'i': case 'u': case 'x': case 'X': case 'o': case 'c': {
        int64_t n;
        if (arg.is_int() || arg.is_bool()) n = int_of(arg);
        else if (arg.is_float() && conv != 'c' && conv != 'x' && conv != 'X' && conv != 'o') n = static_cast<int64_t>(arg.as_float());
        else return error(std::string("%") + conv + " format: a real number is required, not " + type_name(arg));
        if (conv == 'c') {
          append_utf8(piece, static_cast<uint32_t>(n));
          break;
        }
        ARCH_TRY_STATUS(check_text(precision.value_or(0), "the precision of a '%' conversion, in bytes"));
        std::string spec = "%" + flags + width_text + precision_text + "ll" + (conv == 'u' || conv == 'i' ? 'd' : conv);
        ARCH_TRY(piece, c_format(spec, static_cast<long long>(n)));
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
        if (!arg.is_number()) return error(std::string("must be real number, not ") + type_name(arg));
        ARCH_TRY_STATUS(check_text(precision.value_or(0), "the precision of a '%' conversion, in bytes"));
        std::string spec = "%" + flags + width_text + precision_text + conv;
        ARCH_TRY(piece, c_format(spec, arg.to_double()));
        break;
      }
      default:
        return error(std::string("unsupported format character '") + conv + "'");
    }
    ARCH_TRY_STATUS(check_text_sum(out.size(), piece.size(), what));
    out += piece;
  }
  // Python skips this check when the argument has __getitem__ (a mapping to it).
  bool mapping_like = args.is_dict() || (args.is_list() && !args.is_tuple()) || args.is_undefined();
  if (!mapping_like && next_arg < positional.size())
    return error("not all arguments converted during string formatting");
  return out;
}

}  // namespace arch::jinja

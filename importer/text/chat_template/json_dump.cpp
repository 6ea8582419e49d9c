#include "importer/text/chat_template/json_dump.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "importer/text/chat_template/budget.h"
#include "importer/text/chat_template/text.h"

namespace arch::jinja {

namespace {

void append_json_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (size_t i = 0; i < s.size();) {
    Utf8Char c = decode_utf8(s, i);
    uint32_t cp = c.cp;
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7F && !(c.len == 1 && cp >= 0x80))) {
          if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
          }
          out += buf;
        } else {
          out.append(s, i, c.len);
        }
    }
    i += c.len;
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py_float_repr(d);
}

// The text grows by pieces (a string escapes to at most six times its
// size); the cap, chat_text_bytes, is checked before each string and after
// every piece, so the dump stops as soon as it passes it.
class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o), cap_(text_cap()) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
    key_sep_ = o.key_separator ? *o.key_separator : ": ";
  }

  Status dump(const Value& v, int level, std::string& out) {
    if (level > 1000) return error("tojson: nesting too deep");
    ARCH_TRY_STATUS(dump_value(v, level, out));
    return room(out, 0);
  }

 private:
  Status room(const std::string& out, uint64_t more) const {
    if (out.size() + more <= cap_) return {};
    return text_over(out.size() + more, "the size in bytes of the JSON text tojson makes, at least");
  }

  Status dump_value(const Value& v, int level, std::string& out) {
    switch (v.kind()) {
      case Value::Kind::None: out += "null"; return {};
      case Value::Kind::Bool: out += v.as_bool() ? "true" : "false"; return {};
      case Value::Kind::Int: out += std::to_string(v.as_int()); return {};
      case Value::Kind::Float: out += float_json(v.as_float()); return {};
      case Value::Kind::String:
        ARCH_TRY_STATUS(room(out, v.as_string().size() + 2));
        append_json_string(out, v.as_string(), o_.ensure_ascii);
        return {};
      case Value::Kind::List: {
        if (!v.list().view.empty())
          return error("Object of type " + type_name(v) + " is not JSON serializable");
        const auto& items = v.list().items;
        if (items.empty()) { out += "[]"; return {}; }
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          out += i ? item_sep_ : "";
          ARCH_TRY_STATUS(newline(out, level + 1));
          ARCH_TRY_STATUS(dump(items[i], level + 1, out));
        }
        ARCH_TRY_STATUS(newline(out, level));
        out += ']';
        return {};
      }
      case Value::Kind::Dict: {
        std::vector<std::pair<Value, Value>> items = v.dict().items;
        if (items.empty()) { out += "{}"; return {}; }
        if (o_.sort_keys) {
          std::string failure;
          std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
            auto c = compare(a.first, b.first);
            if (!c.ok()) { failure = c.error().message; return false; }
            return *c < 0;
          });
          if (!failure.empty()) return error(failure);
        }
        out += '{';
        bool first = true;
        for (const auto& [k, val] : items) {
          out += first ? "" : item_sep_;
          first = false;
          ARCH_TRY_STATUS(newline(out, level + 1));
          ARCH_TRY(std::string key, key_text(k));
          ARCH_TRY_STATUS(room(out, key.size() + 2));
          append_json_string(out, key, o_.ensure_ascii);
          out += key_sep_;
          ARCH_TRY_STATUS(dump(val, level + 1, out));
        }
        ARCH_TRY_STATUS(newline(out, level));
        out += '}';
        return {};
      }
      default:
        return error("Object of type " + type_name(v) + " is not JSON serializable");
    }
  }

  Status newline(std::string& out, int level) const {
    if (!o_.indent) return {};
    ARCH_TRY_STATUS(room(out, 1 + uint64_t(level) * o_.indent->size()));
    out += '\n';
    for (int i = 0; i < level; ++i) out += *o_.indent;
    return {};
  }

  static Result<std::string> key_text(const Value& k) {
    switch (k.kind()) {
      case Value::Kind::String: return k.as_string();
      case Value::Kind::Int: return std::to_string(k.as_int());
      case Value::Kind::Float: return float_json(k.as_float());
      case Value::Kind::Bool: return std::string(k.as_bool() ? "true" : "false");
      case Value::Kind::None: return std::string("null");
      default:
        return error("keys must be str, int, float, bool or None, not " + type_name(k));
    }
  }

  const JsonDumpOptions& o_;
  const uint64_t cap_;
  std::string item_sep_, key_sep_;
};

}  // namespace

Result<std::string> json_dumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dumper d(options);
  ARCH_TRY_STATUS(d.dump(v, 0, out));
  return out;
}

}  // namespace arch::jinja

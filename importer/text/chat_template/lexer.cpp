#include "importer/text/chat_template/lexer.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "importer/text/chat_template/text.h"

namespace arch::jinja {

std::string located(Pos pos, const std::string& message) {
  return "chat_template:" + std::to_string(pos.line) + ":" + std::to_string(pos.col) + ": " +
         message;
}

std::string normalize_template_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {
    line_starts_.push_back(0);
    for (size_t i = 0; i < src.size(); ++i)
      if (src[i] == '\n') line_starts_.push_back(i + 1);
  }

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      Status st = root_step();
      if (!st.ok()) return st.error();
    }
    Token eof;
    eof.kind = Tok::Eof;
    eof.pos = pos_at(src_.size());
    tokens_.push_back(eof);
    return std::move(tokens_);
  }

 private:
  enum class TagKind { Variable, Block, Comment, Raw };

  Pos pos_at(size_t offset) const {
    size_t lo = 0, hi = line_starts_.size();
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (line_starts_[mid] <= offset) lo = mid;
      else hi = mid;
    }
    Pos p;
    p.line = static_cast<int>(lo) + 1;
    // Columns count characters; continue from the last position asked for
    // when it is earlier on the same line (tokens come in order), so a
    // template that is one long line does not cost quadratic time.
    size_t from = line_starts_[lo];
    int col = 1;
    if (memo_line_ == p.line && memo_offset_ <= offset) {
      from = memo_offset_;
      col = memo_col_;
    }
    p.col = col + static_cast<int>(char_count(src_.substr(from, offset - from)));
    memo_line_ = p.line;
    memo_offset_ = offset;
    memo_col_ = p.col;
    return p;
  }

  Error fail(size_t offset, const std::string& message) const {
    return error(located(pos_at(offset), message));
  }

  bool starts(size_t at, std::string_view what) const {
    return at <= src_.size() && src_.substr(at, what.size()) == what;
  }

  size_t skip_space(size_t at) const {
    while (at < src_.size()) {
      Utf8Char c = decode_utf8(src_, at);
      if (!py_isspace(c.cp)) break;
      at += c.len;
    }
    return at;
  }

  // "{%" ["-"|"+"] \s* "raw" \s* ("-%}" \s* | "%}"): returns the end offset.
  std::optional<size_t> match_raw_begin(size_t at) const {
    size_t p = at + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p = skip_space(p);
    if (!starts(p, "raw")) return std::nullopt;
    p = skip_space(p + 3);
    if (starts(p, "-%}")) return skip_space(p + 3);
    if (starts(p, "%}")) return p + 2;
    return std::nullopt;
  }

  // "{%" sign \s* "endraw" \s* ("+%}" | "-%}" \s* | "%}" "\n"?): end offset.
  std::optional<size_t> match_raw_end(size_t at, char* sign) const {
    if (!starts(at, "{%")) return std::nullopt;
    size_t p = at + 2;
    *sign = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) *sign = src_[p++];
    p = skip_space(p);
    if (!starts(p, "endraw")) return std::nullopt;
    p = skip_space(p + 6);
    if (starts(p, "+%}")) return p + 3;
    if (starts(p, "-%}")) return skip_space(p + 3);
    if (starts(p, "%}")) return p + 2 + (starts(p + 2, "\n") ? 1 : 0);
    return std::nullopt;
  }

  // Text before a tag, after whitespace control: "-" strips all trailing
  // whitespace; otherwise lstrip_blocks removes the indentation before a
  // block or comment tag that starts its line.
  void emit_text(size_t begin, size_t end, char sign, bool lstrip_applies) {
    std::string_view text = src_.substr(begin, end - begin);
    if (sign == '-') {
      text = text.substr(0, py_strip(text, kStripRight, std::nullopt).size());
    } else if (sign != '+' && lstrip_applies) {
      size_t nl = text.rfind('\n');
      size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if (l_pos > 0 || line_starting_) {
        std::string_view tail = text.substr(l_pos);
        if (!tail.empty() && py_strip(tail, kStripLeft, std::nullopt).empty())
          text = text.substr(0, l_pos);
      }
    }
    if (text.empty()) return;
    Token t;
    t.kind = Tok::Text;
    t.text = std::string(text);
    t.pos = pos_at(begin);
    tokens_.push_back(std::move(t));
  }

  Status root_step() {
    // The next "{{", "{%" or "{#".
    size_t at = pos_;
    for (;; ++at) {
      at = src_.find('{', at);
      if (at == std::string_view::npos || at + 1 >= src_.size()) {
        emit_text(pos_, src_.size(), 0, false);
        pos_ = src_.size();
        return {};
      }
      char c = src_[at + 1];
      if (c == '{' || c == '%' || c == '#') break;
    }
    char sign = 0;
    if (at + 2 < src_.size() && (src_[at + 2] == '-' || src_[at + 2] == '+')) sign = src_[at + 2];
    TagKind kind = src_[at + 1] == '{' ? TagKind::Variable
                   : src_[at + 1] == '#' ? TagKind::Comment
                                         : TagKind::Block;
    std::optional<size_t> raw_end;
    if (kind == TagKind::Block && (raw_end = match_raw_begin(at))) kind = TagKind::Raw;
    emit_text(pos_, at, sign, kind != TagKind::Variable);
    line_starting_ = false;
    size_t body = at + 2 + (sign ? 1 : 0);
    switch (kind) {
      case TagKind::Comment: return comment(at, body);
      case TagKind::Raw: return raw(at, *raw_end);
      case TagKind::Variable:
      case TagKind::Block: return tag(at, body, kind);
    }
    return {};
  }

  void finish_at(size_t end) {
    line_starting_ = end > 0 && src_[end - 1] == '\n';
    pos_ = end;
  }

  Status comment(size_t open, size_t p) {
    for (; p < src_.size(); ++p) {
      if (starts(p, "+#}")) { finish_at(p + 3); return {}; }
      if (starts(p, "-#}")) { finish_at(skip_space(p + 3)); return {}; }
      if (starts(p, "#}")) { finish_at(p + 2 + (starts(p + 2, "\n") ? 1 : 0)); return {}; }
    }
    return fail(open, "comment is never closed (missing '#}')");
  }

  Status raw(size_t open, size_t body) {
    finish_at(body);
    for (size_t p = body; p < src_.size(); ++p) {
      if (src_[p] != '{') continue;
      char sign = 0;
      if (auto end = match_raw_end(p, &sign)) {
        emit_text(body, p, sign, true);
        finish_at(*end);
        return {};
      }
    }
    return fail(open, "'raw' block is never closed (missing '{% endraw %}')");
  }

  Status tag(size_t open, size_t p, TagKind kind) {
    bool block = kind == TagKind::Block;
    push(block ? Tok::BlockBegin : Tok::VarBegin, block ? "{%" : "{{", open);
    std::vector<char> brackets;  // closing brackets expected, innermost last
    while (true) {
      if (p >= src_.size())
        return fail(open, block ? "'{%' tag is never closed (missing '%}')"
                                : "'{{' tag is never closed (missing '}}')");
      if (brackets.empty()) {
        std::optional<size_t> end;
        if (block) {
          if (starts(p, "+%}")) end = p + 3;
          else if (starts(p, "-%}")) end = skip_space(p + 3);
          else if (starts(p, "%}")) end = p + 2 + (starts(p + 2, "\n") ? 1 : 0);
        } else {
          if (starts(p, "-}}")) end = skip_space(p + 3);
          else if (starts(p, "}}")) end = p + 2;
        }
        if (end) {
          push(block ? Tok::BlockEnd : Tok::VarEnd, block ? "%}" : "}}", p);
          finish_at(*end);
          return {};
        }
      }
      Utf8Char c = decode_utf8(src_, p);
      if (py_isspace(c.cp)) {
        p += c.len;
        continue;
      }
      char ch = src_[p];
      if (is_digit(ch)) {
        ARCH_TRY(p, number(p));
        continue;
      }
      if (is_name_start(ch)) {
        size_t b = p;
        while (p < src_.size() && is_name_char(src_[p])) ++p;
        push(Tok::Name, std::string(src_.substr(b, p - b)), b);
        continue;
      }
      if (ch == '\'' || ch == '"') {
        ARCH_TRY(p, string(p));
        continue;
      }
      static const char* kOps2[] = {"**", "//", "==", "!=", ">=", "<="};
      std::string op;
      for (const char* o : kOps2)
        if (starts(p, o)) op = o;
      if (op.empty() && std::string_view("+-/*%~[](){}><=.:|,;").find(ch) != std::string_view::npos)
        op = std::string(1, ch);
      if (op.empty()) {
        std::string shown = std::string(src_.substr(p, c.len));
        return fail(p, "unexpected character '" + shown + "' inside " +
                           (block ? "'{% ... %}'" : "'{{ ... }}'"));
      }
      if (op == "(" || op == "[" || op == "{") {
        brackets.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
      } else if (op == ")" || op == "]" || op == "}") {
        if (brackets.empty()) return fail(p, "unexpected '" + op + "'");
        if (brackets.back() != op[0])
          return fail(p, "unexpected '" + op + "', expected '" + std::string(1, brackets.back()) + "'");
        brackets.pop_back();
      }
      push(Tok::Op, op, p);
      p += op.size();
    }
  }

  // Digits with single underscores between them: \d+(_\d+)*
  size_t digits(size_t p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return std::string_view::npos;
    while (p < src_.size()) {
      if (is_digit(src_[p])) ++p;
      else if (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])) ++p;
      else break;
    }
    return p;
  }

  static std::string without_underscores(std::string_view s) {
    std::string out;
    for (char c : s)
      if (c != '_') out += c;
    return out;
  }

  Result<size_t> number(size_t p) {
    // Floats first, as jinja2 does, unless the number follows a '.' (x.0.1).
    bool after_dot = p > 0 && src_[p - 1] == '.';
    size_t int_end = digits(p);
    if (!after_dot) {
      size_t frac_end = std::string_view::npos;
      if (int_end < src_.size() && src_[int_end] == '.') frac_end = digits(int_end + 1);
      size_t float_end = std::string_view::npos;
      for (size_t start : {frac_end, int_end}) {
        if (start == std::string_view::npos || start >= src_.size()) continue;
        if (src_[start] != 'e' && src_[start] != 'E') continue;
        size_t q = start + 1;
        if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
        size_t e = digits(q);
        if (e != std::string_view::npos) { float_end = e; break; }
      }
      if (float_end == std::string_view::npos) float_end = frac_end;
      if (float_end != std::string_view::npos) {
        std::string text = without_underscores(src_.substr(p, float_end - p));
        Token t;
        t.kind = Tok::Float;
        t.text = text;
        t.fval = std::strtod(text.c_str(), nullptr);
        t.pos = pos_at(p);
        tokens_.push_back(std::move(t));
        return float_end;
      }
    }
    // Integers: 0b.., 0o.., 0x.., decimal.
    int base = 10;
    size_t b = p, e = int_end;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      char x = static_cast<char>(src_[p + 1] | 0x20);
      if (x == 'b' || x == 'o' || x == 'x') {
        base = x == 'b' ? 2 : x == 'o' ? 8 : 16;
        auto ok = [&](char c) {
          c = static_cast<char>(c | 0x20);
          if (base == 2) return c == '0' || c == '1';
          if (base == 8) return c >= '0' && c <= '7';
          return is_digit(c) || (c >= 'a' && c <= 'f');
        };
        size_t q = p + 2;
        size_t last = q;
        while (q < src_.size()) {
          if (ok(src_[q])) last = ++q;
          else if (src_[q] == '_' && q + 1 < src_.size() && ok(src_[q + 1])) ++q;
          else break;
        }
        if (last > p + 2) {
          b = p + 2;
          e = last;
        } else {
          base = 10;
        }
      }
      if (base == 10) {
        // "0(_?0)*": a decimal literal may not start with 0 unless it is all zeros.
        e = p + 1;
        while (e < src_.size() && (src_[e] == '0' || (src_[e] == '_' && e + 1 < src_.size() && src_[e + 1] == '0')))
          ++e;
      }
    }
    std::string text = without_underscores(src_.substr(b, e - b));
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(text.c_str(), &end, base);
    if (errno == ERANGE) return fail(p, "integer literal " + std::string(src_.substr(p, e - p)) + " is too large");
    Token t;
    t.kind = Tok::Int;
    t.text = std::string(src_.substr(p, e - p));
    t.ival = v;
    t.pos = pos_at(p);
    tokens_.push_back(std::move(t));
    return e;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }

  // A quoted literal, decoded as Python's "unicode-escape" codec does.
  Result<size_t> string(size_t p) {
    char q = src_[p];
    size_t i = p + 1;
    while (i < src_.size() && src_[i] != q) i += src_[i] == '\\' ? 2 : 1;
    if (i >= src_.size())
      return fail(p, std::string("string literal is never closed (no closing ") + q + " before the end of the template)");
    std::string_view body = src_.substr(p + 1, i - p - 1);
    std::string out;
    for (size_t k = 0; k < body.size();) {
      if (body[k] != '\\' || k + 1 >= body.size()) {
        out += body[k++];
        continue;
      }
      char e = body[k + 1];
      size_t esc_at = p + 1 + k;
      k += 2;
      switch (e) {
        case '\n': break;  // line continuation
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': case 'u': case 'U': {
          size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t d = 0; d < n; ++d) {
            int h = k + d < body.size() ? hex_value(body[k + d]) : -1;
            if (h < 0)
              return fail(esc_at, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
          }
          if (cp > 0x10FFFF) return fail(esc_at, "illegal Unicode character in string literal");
          k += n;
          append_utf8(out, cp);
          break;
        }
        case 'N':
          return fail(esc_at, "\\N{...} escapes are not supported in string literals");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int d = 0; d < 2 && k < body.size() && body[k] >= '0' && body[k] <= '7'; ++d)
              cp = cp * 8 + static_cast<uint32_t>(body[k++] - '0');
            append_utf8(out, cp);
          } else if (static_cast<unsigned char>(e) >= 0x80) {
            // Python first writes non-ASCII characters as \x../\u.. escapes,
            // so a backslash before one stays a backslash before that text.
            Utf8Char c = decode_utf8(body, k - 1);
            char buf[16];
            if (c.cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", c.cp);
            else if (c.cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", c.cp);
            else std::snprintf(buf, sizeof buf, "\\U%08x", c.cp);
            out += buf;
            k += c.len - 1;
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    Token t;
    t.kind = Tok::String;
    t.text = std::move(out);
    t.pos = pos_at(p);
    tokens_.push_back(std::move(t));
    return i + 1;
  }

  void push(Tok kind, std::string text, size_t at) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.pos = pos_at(at);
    tokens_.push_back(std::move(t));
  }

  std::string_view src_;
  mutable int memo_line_ = 0, memo_col_ = 1;
  mutable size_t memo_offset_ = 0;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<size_t> line_starts_;
  std::vector<Token> tokens_;
};

}  // namespace

Result<std::vector<Token>> lex_template(std::string_view normalized_source) {
  return Lexer(normalized_source).run();
}

}  // namespace arch::jinja

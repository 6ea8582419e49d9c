// GBNF text into rules of code-point sets and rule references: a
// recursive-descent reader of the text; groups and repetitions written out
// as rules of their own (x* as R ::= x R | ε, x{m,n} as m copies and
// n - m nested optionals); then every name checked defined and no rule
// left-recursive.
#include "engine/runtime/grammar.h"

#include <functional>
#include <map>
#include <set>

namespace arch {

namespace {

struct Reader {
  const std::string& s;
  const std::string& where;
  int max_repeat;
  size_t max_elements;
  size_t i = 0;
  size_t written = 0;  // elements written out so far (repetitions multiply them)
  Grammar g;
  std::map<std::string, int> ids;
  std::map<std::string, size_t> first_use;  // a name used before (or without) its definition -> where

  int line_at(size_t at) const {
    int n = 1;
    for (size_t k = 0; k < at && k < s.size(); ++k) n += s[k] == '\n';
    return n;
  }
  Error fault(const std::string& what) const { return Error{where + ":" + std::to_string(line_at(i)) + ": " + what}; }

  int rule_id(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    g.rules.push_back(Grammar::Rule{name, {}});
    ids[name] = int(g.rules.size()) - 1;
    return int(g.rules.size()) - 1;
  }
  int fresh(const std::string& base) { return rule_id(base + "#" + std::to_string(g.rules.size())); }

  // Spaces and comments; newlines only where `newline_ok` (inside groups).
  void space(bool newline_ok) {
    while (i < s.size()) {
      if (s[i] == '#') {
        while (i < s.size() && s[i] != '\n') ++i;
      } else if (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || (newline_ok && s[i] == '\n')) {
        ++i;
      } else {
        break;
      }
    }
  }
  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }
  std::string name() {
    size_t b = i;
    while (i < s.size() && name_char(s[i])) ++i;
    return s.substr(b, i - b);
  }
  // One UTF-8 code point of the text.
  char32_t utf8() {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    char32_t v = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    ++i;
    for (int k = 1; k < n && i < s.size(); ++k, ++i) v = (v << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
    return v;
  }
  Result<char32_t> hex(int digits) {
    char32_t v = 0;
    for (int k = 0; k < digits; ++k, ++i) {
      if (i >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i]))) return fault("a \\x, \\u or \\U escape needs " + std::to_string(digits) + " hex digits");
      v = v * 16 + char32_t(std::isdigit(static_cast<unsigned char>(s[i])) ? s[i] - '0' : (std::tolower(s[i]) - 'a' + 10));
    }
    return v;
  }
  // A character of a literal or class, escapes read.
  Result<char32_t> character() {
    if (i >= s.size()) return fault("the text ends inside a literal or class");
    if (s[i] != '\\') return utf8();
    ++i;
    if (i >= s.size()) return fault("the text ends after a backslash");
    const char e = s[i++];
    switch (e) {
      case 'n': return char32_t('\n');
      case 't': return char32_t('\t');
      case 'r': return char32_t('\r');
      case 'x': return hex(2);
      case 'u': return hex(4);
      case 'U': return hex(8);
      case '\\': case '"': case '[': case ']': case '-': case '^': case '/': return char32_t(e);
      default: return fault(std::string("unknown escape \\") + e);
    }
  }

  using Sequence = std::vector<GrammarElement>;
  static GrammarElement ref(int r) {
    GrammarElement e;
    e.is_rule = true;
    e.rule = r;
    return e;
  }

  // One item: a literal (possibly several elements), a class, a name, a
  // group, `.`; then its repetition.
  Status item(Sequence& seq, const std::string& owner) {
    Sequence atom;
    if (s[i] == '"') {
      ++i;
      while (i < s.size() && s[i] != '"' && s[i] != '\n') {
        ARCH_TRY(char32_t c, character());
        GrammarElement e;
        e.ranges = {{c, c}};
        atom.push_back(e);
      }
      if (i >= s.size() || s[i] != '"') return fault("a string literal is not closed on its line");
      ++i;
      if (atom.empty()) return {};  // "": matches nothing, repeated or not
    } else if (s[i] == '[') {
      ++i;
      GrammarElement e;
      if (i < s.size() && s[i] == '^') e.negated = true, ++i;
      while (i < s.size() && s[i] != ']' && s[i] != '\n') {
        ARCH_TRY(char32_t a, character());
        char32_t b = a;
        if (i + 1 < s.size() && s[i] == '-' && s[i + 1] != ']') {
          ++i;
          ARCH_TRY(b, character());
          if (b < a) return fault("a class's range runs backwards");
        }
        e.ranges.push_back({a, b});
      }
      if (i >= s.size() || s[i] != ']') return fault("a character class is not closed on its line");
      ++i;
      if (e.ranges.empty()) return fault(e.negated ? "a class [^] (use . for any character)" : "an empty class [] matches nothing");
      atom.push_back(e);
    } else if (s[i] == '.') {
      ++i;
      GrammarElement e;
      e.negated = true;  // any code point: not in no range
      atom.push_back(e);
    } else if (s[i] == '(') {
      ++i;
      const int r = fresh(owner);
      ARCH_TRY_STATUS(alternatives(r, true));
      if (i >= s.size() || s[i] != ')') return fault("a group is not closed with ')'");
      ++i;
      atom.push_back(ref(r));
    } else if (name_char(s[i])) {
      const std::string n = name();
      if (!ids.count(n)) first_use[n] = i;
      atom.push_back(ref(rule_id(n)));
    } else {
      return fault(std::string("unexpected '") + s[i] + "'");
    }
    // A repetition applies to the whole atom (a literal's characters too).
    if (i < s.size() && (s[i] == '*' || s[i] == '+' || s[i] == '?' || s[i] == '{')) {
      int lo = 0, hi = -1;
      if (s[i] == '*') lo = 0, hi = -1, ++i;
      else if (s[i] == '+') lo = 1, hi = -1, ++i;
      else if (s[i] == '?') lo = 0, hi = 1, ++i;
      else {
        ++i;
        auto number = [&]() -> Result<int> {
          space(false);
          size_t b = i;
          while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
          if (b == i || i - b > 6) return fault("a repetition {m,n} needs counts");
          return std::stoi(s.substr(b, i - b));
        };
        ARCH_TRY(lo, number());
        space(false);
        hi = lo;
        if (i < s.size() && s[i] == ',') {
          ++i;
          space(false);
          hi = -1;
          if (i < s.size() && s[i] != '}') {
            ARCH_TRY(hi, number());
          }
        }
        space(false);
        if (i >= s.size() || s[i] != '}') return fault("a repetition {m,n} is not closed with '}'");
        ++i;
        if (lo > max_repeat || hi > max_repeat) return fault("a repetition count past " + std::to_string(max_repeat));
        if (hi >= 0 && hi < lo) return fault("a repetition {m,n} with n < m");
      }
      // The atom as one element: a rule of its own where it is several.
      GrammarElement x = atom.size() == 1 ? atom[0] : GrammarElement{};
      if (atom.size() != 1) {
        const int r = fresh(owner);
        g.rules[size_t(r)].alternatives = {atom};
        x = ref(r);
      }
      // Written out before it is made: counts multiply an item.
      written += atom.size() + size_t(lo) + 2 * size_t(hi < 0 ? 1 : hi - lo) + 2;
      if (written > max_elements)
        return fault("the grammar writes out past " + std::to_string(max_elements) + " elements (repetition counts multiply its items)");
      for (int k = 0; k < lo; ++k) seq.push_back(x);
      if (hi < 0) {  // R ::= x R | ε
        const int r = fresh(owner);
        g.rules[size_t(r)].alternatives = {{x, ref(r)}, {}};
        seq.push_back(ref(r));
      } else if (hi > lo) {  // O_1 ::= x | ε, O_k ::= x O_(k-1) | ε
        int prev = -1;
        for (int k = 0; k < hi - lo; ++k) {
          const int r = fresh(owner);
          Sequence more = {x};
          if (prev >= 0) more.push_back(ref(prev));
          g.rules[size_t(r)].alternatives = {more, {}};
          prev = r;
        }
        seq.push_back(ref(prev));
      }
      return {};
    }
    written += atom.size();
    if (written > max_elements)
      return fault("the grammar writes out past " + std::to_string(max_elements) + " elements");
    seq.insert(seq.end(), atom.begin(), atom.end());
    return {};
  }

  Status alternatives(int r, bool nested) {
    const std::string owner = g.rules[size_t(r)].name;
    for (;;) {
      Sequence seq;
      space(nested);
      while (i < s.size() && s[i] != '|' && s[i] != ')' && s[i] != '\n') {
        ARCH_TRY_STATUS(item(seq, owner));
        space(nested);
      }
      g.rules[size_t(r)].alternatives.push_back(std::move(seq));
      if (i < s.size() && s[i] == '|') {
        ++i;
        continue;
      }
      return {};
    }
  }

  Status rules() {
    std::set<std::string> defined;
    for (;;) {
      space(true);
      if (i >= s.size()) break;
      const size_t start = i;
      const std::string n = name();
      if (n.empty()) return fault(std::string("a rule's name expected, not '") + s[start] + "'");
      space(false);
      if (s.compare(i, 3, "::=") != 0) return fault("'" + n + "' is not followed by '::='");
      i += 3;
      if (!defined.insert(n).second) return fault("rule '" + n + "' is defined twice");
      const int r = rule_id(n);
      first_use.erase(n);
      ARCH_TRY_STATUS(alternatives(r, false));
      if (i < s.size() && s[i] == ')') return fault("a ')' with no group open");
    }
    for (const auto& [n, at] : first_use)
      if (!defined.count(n)) {
        i = at;
        return fault("rule '" + n + "' is used but not defined");
      }
    return {};
  }
};

// A rule that reaches itself before consuming anything (through its
// alternatives' first elements, past rules that can match nothing).
Status refuse_left_recursion(const Grammar& g, const std::string& where) {
  const size_t n = g.rules.size();
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : g.rules[r].alternatives) {
        bool all = true;
        for (const auto& e : alt) all = all && e.is_rule && nullable[size_t(e.rule)];
        if (all) {
          nullable[r] = 1, changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<int>> left(n);
  for (size_t r = 0; r < n; ++r)
    for (const auto& alt : g.rules[r].alternatives)
      for (const auto& e : alt) {
        if (!e.is_rule) break;
        left[r].push_back(e.rule);
        if (!nullable[size_t(e.rule)]) break;
      }
  std::vector<int> state(n, 0);  // 0 unseen, 1 on the path, 2 done
  std::function<int(int)> visit = [&](int r) -> int {
    state[size_t(r)] = 1;
    for (int to : left[size_t(r)]) {
      if (state[size_t(to)] == 1) return to;
      if (state[size_t(to)] == 0)
        if (int found = visit(to); found >= 0) return found;
    }
    state[size_t(r)] = 2;
    return -1;
  };
  for (size_t r = 0; r < n; ++r)
    if (state[r] == 0)
      if (int found = visit(int(r)); found >= 0)
        return error(where + ": rule '" + g.rules[size_t(found)].name.substr(0, g.rules[size_t(found)].name.find('#')) +
                     "' is left-recursive (it reaches itself before matching a character)");
  return {};
}

}  // namespace

std::string gbnf_literal(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (c == '"' || c == '\\') out += '\\', out += c;
    else out += c;
  }
  return out + "\"";
}

Result<Grammar> parse_gbnf(const std::string& text, const std::string& where, int max_repeat, size_t max_elements) {
  Reader r{text, where, max_repeat, max_elements};
  ARCH_TRY_STATUS(r.rules());
  auto it = r.ids.find("root");
  if (it == r.ids.end()) return error(where + ": no 'root' rule");
  r.g.root = it->second;
  ARCH_TRY_STATUS(refuse_left_recursion(r.g, where));
  return std::move(r.g);
}

}  // namespace arch

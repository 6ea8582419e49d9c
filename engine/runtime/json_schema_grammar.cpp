#include "engine/runtime/json_schema_grammar.h"

#include <map>
#include <set>

#include "engine/runtime/grammar.h"

namespace arch {

namespace {

// JSON's own pieces. Whitespace between tokens is bounded (a newline and
// up to 8 spaces) so a model cannot pad forever.
const char* kJsonRules = R"(ws ::= | " " | "\n" [ ]{0,8}
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
string ::= "\"" char* "\""
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
number ::= integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,4} )?
boolean ::= "true" | "false"
null ::= "null"
)";

// A regular expression (JSON Schema's `pattern`: ECMA-262, unanchored) as
// a GBNF expression of a JSON string's contents: what the value holds,
// written as JSON writes it (a quote or backslash escaped). The subset:
// literals, classes ([a-z], [^...], \d \w \s), `.`, groups, alternation,
// * + ? {m} {m,} {m,n}, ^ at the start and $ at the end. A class or `.`
// stands for no quote, backslash or control character (JSON would escape
// them), and \s for a space: every text made is valid, some valid ones are
// not made. Back-references, lookaround and the like are refused by name.
struct Pattern {
  const std::string& re;
  const std::string& at;
  size_t i = 0;

  Error refuse(const std::string& what) const {
    return Error{"'pattern' " + re + ": " + what + " (at character " + std::to_string(i) + ")"};
  }
  static std::string plain_class(const std::string& inside, bool negated) {
    // Never a raw quote, backslash or control character: JSON escapes them.
    return negated ? "[^" + inside + "\"\\\\\\x00-\\x1F]" : "[" + inside + "]";
  }
  // A literal character of the value as the JSON text writes it.
  Result<std::string> literal_char(unsigned char c) const {
    if (c < 0x20) return refuse("a control character");
    if (c == '"') return std::string(R"("\\\"")");  // JSON writes a quote as backslash, quote
    if (c == '\\') return std::string(R"("\\\\")");  // and a backslash as two
    return "\"" + std::string(1, char(c)) + "\"";
  }
  // A class's member as GBNF class text (escapes kept where GBNF needs them).
  Result<std::string> class_text() {
    std::string out;
    while (i < re.size() && re[i] != ']') {
      char c = re[i++];
      if (c == '\\') {
        if (i >= re.size()) return refuse("a class ends in a backslash");
        const char e = re[i++];
        if (e == 'd') out += "0-9";
        else if (e == 'w') out += "a-zA-Z0-9_";
        else if (e == 's') out += " ";
        else if (std::string("-]\\^[.()*+?{}|/$").find(e) != std::string::npos) out += std::string("\\") + e;
        else return refuse(std::string("the class escape \\") + e);
        continue;
      }
      if (c == '"') return refuse("a quote in a class (JSON writes it escaped)");
      if (static_cast<unsigned char>(c) < 0x20) return refuse("a control character in a class");
      if (c == '[') out += "\\[";
      else out += c;
    }
    if (i >= re.size()) return refuse("a class is not closed");
    ++i;
    return out;
  }
  Result<std::string> atom() {
    const char c = re[i++];
    if (c == '(') {
      if (i < re.size() && re[i] == '?') {
        if (i + 1 < re.size() && re[i + 1] == ':') i += 2;
        else return refuse("lookaround and named groups ((?=, (?!, (?<) are not supported");
      }
      ARCH_TRY(std::string inner, alternatives());
      if (i >= re.size() || re[i] != ')') return refuse("a group is not closed");
      ++i;
      return "( " + inner + " )";
    }
    if (c == '[') {
      const bool negated = i < re.size() && re[i] == '^';
      if (negated) ++i;
      ARCH_TRY(std::string inside, class_text());
      if (inside.empty()) return refuse("an empty class");
      return plain_class(inside, negated);
    }
    if (c == '.') return plain_class("", true);
    if (c == '\\') {
      if (i >= re.size()) return refuse("a pattern ends in a backslash");
      const char e = re[i++];
      if (e == 'd') return std::string("[0-9]");
      if (e == 'w') return std::string("[a-zA-Z0-9_]");
      if (e == 's') return std::string("\" \"");
      if (e == 'D') return plain_class("0-9", true);
      if (e == 'W') return plain_class("a-zA-Z0-9_", true);
      if (std::isdigit(static_cast<unsigned char>(e))) return refuse("back-references are not supported");
      if (std::string("\\^$.|?*+()[]{}/-").find(e) == std::string::npos) return refuse(std::string("the escape \\") + e + " is not supported");
      return literal_char(static_cast<unsigned char>(e));
    }
    if (c == '^' || c == '$') return refuse("^ and $ only at the pattern's start and end");
    if (c == '*' || c == '+' || c == '?' || c == '{') return refuse("a quantifier with nothing before it");
    return literal_char(static_cast<unsigned char>(c));
  }
  Result<std::string> sequence() {
    std::string out;
    while (i < re.size() && re[i] != '|' && re[i] != ')') {
      if (re[i] == '$' && i + 1 == re.size()) break;
      ARCH_TRY(std::string a, atom());
      if (i < re.size() && (re[i] == '*' || re[i] == '+' || re[i] == '?')) {
        a = "( " + a + " )" + re[i++];
      } else if (i < re.size() && re[i] == '{') {
        const size_t close = re.find('}', i);
        if (close == std::string::npos) return refuse("a quantifier {m,n} is not closed");
        const std::string q = re.substr(i, close - i + 1);
        for (char d : q)
          if (!std::isdigit(static_cast<unsigned char>(d)) && d != ',' && d != '{' && d != '}') return refuse("the quantifier " + q);
        a = "( " + a + " )" + q;
        i = close + 1;
      }
      if (i < re.size() && re[i] == '?') ++i;  // lazy: the same texts
      out += (out.empty() ? "" : " ") + a;
    }
    return out.empty() ? std::string("\"\"") : out;
  }
  Result<std::string> alternatives() {
    ARCH_TRY(std::string out, sequence());
    while (i < re.size() && re[i] == '|') {
      ++i;
      ARCH_TRY(std::string more, sequence());
      out += " | " + more;
    }
    return out;
  }
  // The whole pattern, unanchored ends open to any characters.
  Result<std::string> gbnf() {
    const bool start = !re.empty() && re[0] == '^';
    if (start) ++i;
    ARCH_TRY(std::string body, alternatives());
    if (i < re.size() && re[i] == ')') return refuse("a ')' with no group open");
    const bool end = i < re.size() && re[i] == '$';
    return std::string(start ? "" : "char* ") + "( " + body + " )" + (end ? "" : " char*");
  }
};

struct Builder {
  const nlohmann::ordered_json& root;
  const std::string& where;
  std::string prefix;  // of every rule name made
  std::map<std::string, std::string> rules;  // name -> body
  std::set<std::string> refs_seen;
  int made = 0;

  Error refuse(const std::string& at, const std::string& what) const { return Error{where + ": " + at + ": " + what}; }

  std::string rule(const std::string& base, const std::string& body) {
    const std::string name = prefix + base + "-" + std::to_string(made++);
    rules[name] = body;
    return name;
  }

  Result<std::string> ref(const std::string& r, const std::string& at) {
    std::string key;
    for (const char* prefix : {"#/$defs/", "#/definitions/"})
      if (r.rfind(prefix, 0) == 0) key = std::string(prefix).substr(2, std::string(prefix).size() - 3) + "/" + r.substr(std::string(prefix).size());
    if (key.empty()) return refuse(at, "$ref '" + r + "': only #/$defs/NAME and #/definitions/NAME are followed");
    const std::string section = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
    if (!root.is_object() || !root.contains(section) || !root[section].contains(name))
      return refuse(at, "$ref '" + r + "' names no definition");
    std::string rname = prefix + "def-";
    for (char c : name) rname += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    rname += "-" + std::to_string(std::hash<std::string>{}(key) % 100000);
    if (refs_seen.insert(rname).second) {
      rules[rname] = "null";  // a placeholder while its body is made (a recursive $ref reads the name)
      ARCH_TRY(std::string body, visit(root[section][name], at + "/" + r));
      rules[rname] = body;
    }
    return rname;
  }

  Result<std::string> object(const nlohmann::ordered_json& s, const std::string& at) {
    if (!s.contains("properties")) return std::string("object");
    const auto& props = s["properties"];
    if (!props.is_object()) return refuse(at, "'properties' must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      if (!s["required"].is_array()) return refuse(at, "'required' must be a list of names");
      for (const auto& r : s["required"]) {
        if (!r.is_string()) return refuse(at, "'required' must be a list of names");
        if (!props.contains(r.get<std::string>())) return refuse(at, "'required' names '" + r.get<std::string>() + "', which 'properties' has not");
        required.insert(r.get<std::string>());
      }
    }
    // Each property as "key": value, in the order the schema lists them.
    std::vector<std::pair<std::string, bool>> kvs;  // rule, required
    for (auto it = props.begin(); it != props.end(); ++it) {
      ARCH_TRY(std::string v, visit(it.value(), at + "/properties/" + it.key()));
      kvs.push_back({rule("kv", gbnf_literal(nlohmann::ordered_json(it.key()).dump()) + " ws \":\" ws " + v + " ws"), required.count(it.key()) > 0});
    }
    // After a property: each later one, a comma before it, required ones
    // always, optional ones or not. Before any: the first present one with
    // no comma.
    std::vector<std::string> after(kvs.size() + 1), first(kvs.size() + 1);
    after[kvs.size()] = rule("after", "");
    first[kvs.size()] = rule("first", "");
    for (size_t j = kvs.size(); j-- > 0;) {
      const std::string& kv = kvs[j].first;
      after[j] = kvs[j].second ? rule("after", "\",\" ws " + kv + " " + after[j + 1])
                               : rule("after", "( \",\" ws " + kv + " )? " + after[j + 1]);
      first[j] = kvs[j].second ? rule("first", kv + " " + after[j + 1])
                               : rule("first", kv + " " + after[j + 1] + " | " + first[j + 1]);
    }
    return rule("object", "\"{\" ws " + first[0] + " \"}\"");
  }

  // A count keyword (minItems, maxLength, ...): 0 to 1000, or `otherwise` where absent.
  Result<int64_t> count(const nlohmann::ordered_json& s, const char* key, int64_t otherwise, const std::string& at) const {
    if (!s.contains(key)) return otherwise;
    if (!s[key].is_number_integer() || s[key].get<int64_t>() < 0 || s[key].get<int64_t>() > 1000)
      return refuse(at, std::string("'") + key + "' must be a whole number from 0 to 1000");
    return s[key].get<int64_t>();
  }

  Result<std::string> array(const nlohmann::ordered_json& s, const std::string& at) {
    std::string item = "value";
    if (s.contains("items")) {
      ARCH_TRY(item, visit(s["items"], at + "/items"));
    }
    ARCH_TRY(int64_t lo, count(s, "minItems", 0, at));
    ARCH_TRY(int64_t hi, count(s, "maxItems", -1, at));
    if (hi >= 0 && hi < lo) return refuse(at, "maxItems is less than minItems");
    if (hi == 0) return rule("array", "\"[\" ws \"]\"");
    const std::string more = "( \",\" ws " + item + " ws )";
    std::string rep = lo <= 1 ? (hi < 0 ? more + "*" : more + "{0," + std::to_string(hi - 1) + "}")
                              : (hi < 0 ? more + "{" + std::to_string(lo - 1) + ",}" : more + "{" + std::to_string(lo - 1) + "," + std::to_string(hi - 1) + "}");
    const std::string items = item + " ws " + rep;
    return rule("array", "\"[\" ws " + (lo == 0 ? "( " + items + " )?" : items) + " \"]\"");
  }

  Result<std::string> string(const nlohmann::ordered_json& s, const std::string& at) {
    if (s.contains("pattern")) {
      if (!s["pattern"].is_string()) return refuse(at, "'pattern' must be a string");
      if (s.contains("minLength") || s.contains("maxLength")) return refuse(at, "'pattern' beside minLength or maxLength is not supported");
      Pattern p{s["pattern"].get_ref<const std::string&>(), at};
      auto g = p.gbnf();
      if (!g.ok()) return refuse(at, g.error().message);
      return rule("pattern", "\"\\\"\" " + *g + " \"\\\"\"");
    }
    if (!s.contains("minLength") && !s.contains("maxLength")) return std::string("string");
    ARCH_TRY(int64_t lo, count(s, "minLength", 0, at));
    ARCH_TRY(int64_t hi, count(s, "maxLength", -1, at));
    if (hi >= 0 && hi < lo) return refuse(at, "maxLength is less than minLength");
    return rule("string", "\"\\\"\" char{" + std::to_string(lo) + "," + (hi >= 0 ? std::to_string(hi) : "") + "} \"\\\"\"");
  }

  Result<std::string> of_type(const std::string& type, const nlohmann::ordered_json& s, const std::string& at) {
    if (type == "object") return object(s, at);
    if (type == "array") return array(s, at);
    if (type == "string") return string(s, at);
    if (type == "number" || type == "integer" || type == "boolean" || type == "null") return type;
    return refuse(at, "type '" + type + "' is not a JSON Schema type");
  }

  Result<std::string> visit(const nlohmann::ordered_json& s, const std::string& at) {
    if (s.is_boolean()) {
      if (!s.get<bool>()) return refuse(at, "the schema false admits no value");
      return std::string("value");
    }
    if (!s.is_object()) return refuse(at, "a schema must be an object or a boolean");
    static const std::set<std::string> annotations = {"title", "description", "examples", "default", "$comment",
                                                      "$schema", "$id", "$defs", "definitions"};
    static const std::set<std::string> handled = {"type", "properties", "required", "additionalProperties", "items",
                                                  "minItems", "maxItems", "minLength", "maxLength", "pattern", "enum",
                                                  "const", "anyOf", "$ref"};
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!annotations.count(it.key()) && !handled.count(it.key()))
        return refuse(at, "'" + it.key() + "' is not supported (supported: type, properties, required, items, minItems, maxItems, "
                          "minLength, maxLength, pattern, enum, const, anyOf, $ref into $defs)");
    if (s.contains("additionalProperties") && !s["additionalProperties"].is_boolean())
      return refuse(at, "'additionalProperties' as a schema is not supported (only true or false: the reply holds the listed properties)");
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) return refuse(at, "'$ref' must be a string");
      return ref(s["$ref"].get<std::string>(), at);
    }
    if (s.contains("const")) return rule("const", gbnf_literal(s["const"].dump()));
    if (s.contains("enum")) {
      if (!s["enum"].is_array() || s["enum"].empty()) return refuse(at, "'enum' must be a non-empty list");
      std::string body;
      for (const auto& v : s["enum"]) body += (body.empty() ? "" : " | ") + gbnf_literal(v.dump());
      return rule("enum", body);
    }
    if (s.contains("anyOf")) {
      if (!s["anyOf"].is_array() || s["anyOf"].empty()) return refuse(at, "'anyOf' must be a non-empty list of schemas");
      std::string body;
      for (size_t i = 0; i < s["anyOf"].size(); ++i) {
        ARCH_TRY(std::string v, visit(s["anyOf"][i], at + "/anyOf/" + std::to_string(i)));
        body += (body.empty() ? "" : " | ") + v;
      }
      return rule("any-of", body);
    }
    if (!s.contains("type")) return std::string("value");
    if (s["type"].is_string()) return of_type(s["type"].get<std::string>(), s, at);
    if (s["type"].is_array() && !s["type"].empty()) {
      std::string body;
      for (const auto& t : s["type"]) {
        if (!t.is_string()) return refuse(at, "'type' must be a name or a list of names");
        ARCH_TRY(std::string v, of_type(t.get<std::string>(), s, at));
        body += (body.empty() ? "" : " | ") + v;
      }
      return rule("types", body);
    }
    return refuse(at, "'type' must be a name or a list of names");
  }
};

}  // namespace

Result<SchemaRules> json_schema_rules(const nlohmann::ordered_json& schema, const std::string& where, const std::string& prefix) {
  Builder b{schema, where, prefix};
  SchemaRules out;
  ARCH_TRY(out.top, b.visit(schema, "#"));
  for (const auto& [name, body] : b.rules) out.rules += name + " ::= " + (body.empty() ? "\"\"" : body) + "\n";
  return out;
}

std::string json_common_gbnf() { return kJsonRules; }

Result<std::string> json_schema_gbnf(const nlohmann::ordered_json& schema, const std::string& where) {
  ARCH_TRY(SchemaRules r, json_schema_rules(schema, where, ""));
  // A space may come first: SentencePiece vocabularies write a word's
  // leading space into its first token ("▁{").
  return "root ::= \" \"? " + r.top + "\n" + kJsonRules + r.rules;
}

std::string json_object_gbnf() { return std::string("root ::= \" \"? object\n") + kJsonRules; }

}  // namespace arch

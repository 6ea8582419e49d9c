// The program's text: YAML through yaml-cpp, every field in a fixed order
// so that two lowerings diff line by line.
#include "engine/npu2/program.h"

#include <cmath>

#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace arch::npu2 {

const Buffer* Program::buffer(const std::string& name) const {
  for (const auto& b : buffers)
    if (b.name == name) return &b;
  return nullptr;
}

int64_t Program::chunk_of(const std::string& version) const {
  for (const auto& v : versions)
    if (v.name == version) return v.chunk;
  return 0;
}

Tolerance check_tolerance(const Program& p) {
  const auto c = p.numerics.value("check", nlohmann::json::object());
  return Tolerance{c.value("rel", 1.0 / 64), c.value("abs", 1e-3)};
}

namespace {

// ---- writing ----------------------------------------------------------------

void emit_json(YAML::Emitter& out, const nlohmann::json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) out << YAML::Key << it.key() << YAML::Value, emit_json(out, it.value());
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& e : j) emit_json(out, e);
    out << YAML::EndSeq;
  } else if (j.is_null()) {
    out << YAML::Null;
  } else if (j.is_boolean()) {
    out << j.get<bool>();
  } else if (j.is_number_integer()) {
    out << j.get<int64_t>();
  } else if (j.is_number()) {
    // Shortest text that reads back to the same double.
    std::ostringstream s;
    s.precision(17);
    s << j.get<double>();
    double back = 0;
    for (int p = 6; p <= 17; ++p) {
      std::ostringstream t;
      t.precision(p);
      t << j.get<double>();
      std::istringstream(t.str()) >> back;
      if (back == j.get<double>()) {
        s.str(t.str());
        break;
      }
    }
    std::string text = s.str();
    if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // stays a float when read back
    out << text;
  } else {
    out << YAML::DoubleQuoted << j.get<std::string>();
  }
}

void emit_slots(YAML::Emitter& out, const char* key, const std::vector<Slot>& slots) {
  out << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& s : slots) {
    if (s.end == 0) out << s.buffer;
    else out << s.buffer + "[" + std::to_string(s.begin) + ":" + std::to_string(s.end) + "]";
  }
  out << YAML::EndSeq;
}

void emit_dims(YAML::Emitter& out, const Dims& d) {
  out << YAML::Flow << YAML::BeginSeq;
  for (int64_t x : d) out << x;
  out << YAML::EndSeq;
}

}  // namespace

std::string program_yaml(const Program& p) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "target" << YAML::Value << p.target;
  out << YAML::Key << "family" << YAML::Value << p.family;
  out << YAML::Key << "template" << YAML::Value << p.template_file;
  out << YAML::Key << "graph" << YAML::Value << p.graph;
  out << YAML::Key << "profile" << YAML::Value << p.profile;
  out << YAML::Key << "max_context" << YAML::Value << p.max_context;
  out << YAML::Key << "numerics" << YAML::Value;
  emit_json(out, p.numerics);
  out << YAML::Key << "versions" << YAML::Value << YAML::BeginSeq;
  for (const auto& v : p.versions)
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << v.name << YAML::Key << "chunk"
        << YAML::Value << v.chunk << YAML::EndMap;
  out << YAML::EndSeq;
  out << YAML::Key << "carried" << YAML::Value << YAML::Flow << p.carried;
  out << YAML::Key << "buffers" << YAML::Value << YAML::BeginSeq;
  for (const auto& b : p.buffers)
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << b.name << YAML::Key << "dtype"
        << YAML::Value << b.dtype << YAML::Key << "width" << YAML::Value << b.width << YAML::EndMap;
  out << YAML::EndSeq;
  out << YAML::Key << "caches" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : p.caches) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "layer" << YAML::Value << c.layer << YAML::Key << "kv_heads"
        << YAML::Value << c.kv_heads << YAML::Key << "head_dim" << YAML::Value << c.head_dim << YAML::Key
        << "capacity" << YAML::Value << c.capacity << YAML::Key << "dtype" << YAML::Value << c.dtype;
    if (c.window > 0) out << YAML::Key << "window" << YAML::Value << c.window;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  if (!p.states.empty()) {
    out << YAML::Key << "states" << YAML::Value << YAML::BeginSeq;
    for (const auto& s : p.states) {
      out << YAML::Flow << YAML::BeginMap << YAML::Key << "index" << YAML::Value << s.index << YAML::Key << "kind"
          << YAML::Value << s.kind << YAML::Key << "shape" << YAML::Value;
      emit_dims(out, s.shape);
      out << YAML::Key << "dtype" << YAML::Value << s.dtype << YAML::EndMap;
    }
    out << YAML::EndSeq;
  }
  out << YAML::Key << "units" << YAML::Value << YAML::BeginSeq;
  for (const auto& u : p.units) {
    out << YAML::BeginMap;
    out << YAML::Key << "kind" << YAML::Value << u.kind;
    out << YAML::Key << "block" << YAML::Value << u.block;
    out << YAML::Key << "at" << YAML::Value << u.at;
    emit_slots(out, "reads", u.reads);
    emit_slots(out, "writes", u.writes);
    if (!u.constants.empty()) {
      out << YAML::Key << "constants" << YAML::Value << YAML::BeginSeq;
      for (const auto& c : u.constants) {
        out << YAML::BeginMap;
        out << YAML::Key << "role" << YAML::Value << c.role;
        out << YAML::Key << "dtype" << YAML::Value << c.dtype;
        out << YAML::Key << "shape" << YAML::Value;
        emit_dims(out, c.shape);
        if (c.offset != 0) {
          out << YAML::Key << "offset" << YAML::Value;
          emit_json(out, c.offset);
        }
        out << YAML::Key << "parts" << YAML::Value << YAML::BeginSeq;
        for (const auto& v : c.parts)
          out << YAML::Flow << YAML::BeginMap << YAML::Key << "tensor" << YAML::Value << v.tensor << YAML::Key
              << "rows" << YAML::Value << YAML::Flow << YAML::BeginSeq << v.begin << v.end << YAML::EndSeq
              << YAML::EndMap;
        out << YAML::EndSeq << YAML::EndMap;
      }
      out << YAML::EndSeq;
    }
    if (!u.attrs.empty()) {
      out << YAML::Key << "attrs" << YAML::Value << YAML::Flow;
      emit_json(out, u.attrs);
    }
    if (u.last_row) out << YAML::Key << "last_row" << YAML::Value << true;
    out << YAML::Key << "ops" << YAML::Value << YAML::Flow << u.ops;
    out << YAML::Key << "values" << YAML::Value << YAML::Flow << u.values;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

// ---- reading ----------------------------------------------------------------

namespace {

struct Reader {
  const std::string& where;

  Error fault(const YAML::Node& n, const std::string& what) const {
    const auto m = n.Mark();
    std::string at = m.line >= 0 ? ":" + std::to_string(m.line + 1) : "";
    return Error{where + at + ": " + what};
  }
  Result<YAML::Node> field(const YAML::Node& n, const char* key) const {
    if (!n.IsMap()) return fault(n, std::string("expected a mapping with '") + key + "'");
    YAML::Node v = n[key];
    if (!v) return fault(n, std::string("'") + key + "' is missing");
    return v;
  }
  template <class T>
  Result<T> get(const YAML::Node& n, const char* key) const {
    ARCH_TRY(YAML::Node v, field(n, key));
    try {
      return v.as<T>();
    } catch (const YAML::Exception&) {
      return fault(v, std::string("'") + key + "' has the wrong type");
    }
  }
  Result<std::vector<YAML::Node>> seq(const YAML::Node& n, const char* key, bool optional = false) const {
    if (optional && (!n.IsMap() || !n[key])) return std::vector<YAML::Node>{};
    ARCH_TRY(YAML::Node v, field(n, key));
    if (!v.IsSequence()) return fault(v, std::string("'") + key + "' must be a list");
    std::vector<YAML::Node> out;
    for (const auto& e : v) out.push_back(e);
    return out;
  }
};

nlohmann::json to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& kv : n) j[kv.first.as<std::string>()] = to_json(kv.second);
    return j;
  }
  if (n.IsSequence()) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& e : n) j.push_back(to_json(e));
    return j;
  }
  if (n.IsNull() || !n.IsScalar()) return nullptr;
  const std::string s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted: a string whatever it looks like
  if (s == "true") return true;
  if (s == "false") return false;
  // YAML's own spellings of the non-finite floats, read as numbers (so the
  // checks on numbers see them).
  if (s == ".nan" || s == ".NaN" || s == ".NAN") return std::nan("");
  if (s == ".inf" || s == ".Inf" || s == "+.inf") return HUGE_VAL;
  if (s == "-.inf" || s == "-.Inf") return -HUGE_VAL;
  size_t used = 0;
  try {
    long long i = std::stoll(s, &used);
    if (used == s.size()) return int64_t(i);
  } catch (const std::exception&) {
  }
  try {
    double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return s;
}

Result<Slot> parse_slot(const Reader& r, const YAML::Node& n) {
  if (!n.IsScalar()) return r.fault(n, "a buffer reference must be NAME or NAME[begin:end]");
  const std::string s = n.Scalar();
  Slot slot;
  const auto open = s.find('[');
  if (open == std::string::npos) {
    slot.buffer = s;
    return slot;
  }
  slot.buffer = s.substr(0, open);
  const auto colon = s.find(':', open);
  if (colon == std::string::npos || s.back() != ']') return r.fault(n, "'" + s + "' is not NAME[begin:end]");
  try {
    slot.begin = std::stoll(s.substr(open + 1, colon - open - 1));
    slot.end = std::stoll(s.substr(colon + 1, s.size() - colon - 2));
  } catch (const std::exception&) {
    return r.fault(n, "'" + s + "' is not NAME[begin:end]");
  }
  if (slot.begin < 0 || slot.end <= slot.begin) return r.fault(n, "'" + s + "': an empty or negative column range");
  return slot;
}

Result<std::vector<Slot>> parse_slots(const Reader& r, const YAML::Node& unit, const char* key) {
  ARCH_TRY(auto items, r.seq(unit, key));
  std::vector<Slot> out;
  for (const auto& e : items) {
    ARCH_TRY(Slot s, parse_slot(r, e));
    out.push_back(s);
  }
  return out;
}

Result<Unit> parse_unit(const Reader& r, const YAML::Node& n) {
  Unit u;
  ARCH_TRY(u.kind, r.get<std::string>(n, "kind"));
  ARCH_TRY(u.block, r.get<std::string>(n, "block"));
  ARCH_TRY(u.at, r.get<std::string>(n, "at"));
  ARCH_TRY(u.reads, parse_slots(r, n, "reads"));
  ARCH_TRY(u.writes, parse_slots(r, n, "writes"));
  ARCH_TRY(auto constants, r.seq(n, "constants", true));
  for (const auto& c : constants) {
    Constant k;
    ARCH_TRY(k.role, r.get<std::string>(c, "role"));
    ARCH_TRY(k.dtype, r.get<std::string>(c, "dtype"));
    ARCH_TRY(std::vector<int64_t> shape, r.get<std::vector<int64_t>>(c, "shape"));
    k.shape = Dims(shape.begin(), shape.end());
    if (c["offset"]) {
      ARCH_TRY(k.offset, r.get<double>(c, "offset"));
      if (!std::isfinite(k.offset)) return r.fault(c, "a constant's offset must be a finite number");
    }
    ARCH_TRY(auto parts, r.seq(c, "parts"));
    for (const auto& p : parts) {
      TensorView v;
      ARCH_TRY(v.tensor, r.get<std::string>(p, "tensor"));
      ARCH_TRY(std::vector<int64_t> rows, r.get<std::vector<int64_t>>(p, "rows"));
      if (rows.size() != 2 || rows[0] < 0 || rows[1] <= rows[0]) return r.fault(p, "'rows' must be [begin, end)");
      v.begin = rows[0];
      v.end = rows[1];
      k.parts.push_back(v);
    }
    u.constants.push_back(std::move(k));
  }
  if (n["attrs"]) u.attrs = to_json(n["attrs"]);
  // Every number an attribute holds is finite (a NaN scale or cap would run
  // as one), the ones the emulator reads as numbers are numbers, and a
  // softcap's cap is not zero.
  if (n["attrs"] && !u.attrs.is_object()) return r.fault(n, u.kind + " unit of " + u.block + ": 'attrs' must be a mapping");
  static const char* numeric[] = {"eps",   "scale",      "softcap",   "cap",       "layer",      "heads", "kv_heads",
                                  "head_dim", "window", "state", "key_heads", "key_dim", "value_dim", "experts", "k",
                                  "kernel", "channels"};
  static const char* text[] = {"activation", "role", "weights", "shared", "weight"};
  static const char* flag[] = {"normalize", "causal"};
  for (auto it = u.attrs.begin(); it != u.attrs.end(); ++it) {
    for (const char* key : text)
      if (it.key() == key && !it->is_string())
        return r.fault(n, u.kind + " unit of " + u.block + ": attribute '" + it.key() + "' must be a string");
    for (const char* key : flag)
      if (it.key() == key && !it->is_boolean())
        return r.fault(n, u.kind + " unit of " + u.block + ": attribute '" + it.key() + "' must be true or false");
    if (it->is_number_float() && !std::isfinite(it->get<double>()))
      return r.fault(n, u.kind + " unit of " + u.block + ": attribute '" + it.key() + "' is not a finite number");
    if (it->is_array())  // a list of numbers (a norm's scales)
      for (const auto& e : *it)
        if (!e.is_number() || !std::isfinite(e.get<double>()))
          return r.fault(n, u.kind + " unit of " + u.block + ": attribute '" + it.key() + "' holds something not a finite number");
    for (const char* key : numeric)
      if (it.key() == key && !it->is_number())
        return r.fault(n, u.kind + " unit of " + u.block + ": attribute '" + it.key() + "' must be a number");
  }
  if (u.kind == "softcap" && u.attrs.value("cap", 0.0) == 0.0)
    return r.fault(n, "softcap unit of " + u.block + ": its cap must be a non-zero number");
  if (n["last_row"]) {
    ARCH_TRY(u.last_row, r.get<bool>(n, "last_row"));
  }
  ARCH_TRY(u.ops, r.get<std::vector<std::string>>(n, "ops"));
  ARCH_TRY(u.values, r.get<std::vector<std::string>>(n, "values"));
  return u;
}

}  // namespace

Result<Program> parse_program(const std::string& text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Error{where + ":" + std::to_string(e.mark.line + 1) + ": not YAML: " + e.msg};
  }
  Reader r{where};
  Program p;
  try {
    ARCH_TRY(p.target, r.get<std::string>(root, "target"));
    if (p.target != "npu2") return r.fault(root["target"], "target '" + p.target + "' is not npu2");
    ARCH_TRY(p.family, r.get<std::string>(root, "family"));
    ARCH_TRY(p.template_file, r.get<std::string>(root, "template"));
    ARCH_TRY(p.graph, r.get<std::string>(root, "graph"));
    ARCH_TRY(p.profile, r.get<std::string>(root, "profile"));
    ARCH_TRY(p.max_context, r.get<int64_t>(root, "max_context"));
    if (p.max_context <= 0) return r.fault(root["max_context"], "max_context must be positive");
    if (root["numerics"]) p.numerics = to_json(root["numerics"]);
    ARCH_TRY(auto versions, r.seq(root, "versions"));
    for (const auto& v : versions) {
      Version ver;
      ARCH_TRY(ver.name, r.get<std::string>(v, "name"));
      ARCH_TRY(ver.chunk, r.get<int64_t>(v, "chunk"));
      if (ver.chunk <= 0) return r.fault(v, "a version's chunk must be positive");
      p.versions.push_back(ver);
    }
    ARCH_TRY(p.carried, r.get<std::vector<std::string>>(root, "carried"));
    ARCH_TRY(auto buffers, r.seq(root, "buffers"));
    for (const auto& b : buffers) {
      Buffer buf;
      ARCH_TRY(buf.name, r.get<std::string>(b, "name"));
      ARCH_TRY(buf.dtype, r.get<std::string>(b, "dtype"));
      ARCH_TRY(buf.width, r.get<int64_t>(b, "width"));
      if (buf.dtype != "bf16" && buf.dtype != "f32" && buf.dtype != "i32")
        return r.fault(b, "buffer '" + buf.name + "': dtype '" + buf.dtype + "' is not bf16, f32 or i32");
      if (buf.width <= 0) return r.fault(b, "buffer '" + buf.name + "': width must be positive");
      p.buffers.push_back(buf);
    }
    ARCH_TRY(auto caches, r.seq(root, "caches"));
    for (const auto& c : caches) {
      Cache k;
      ARCH_TRY(k.layer, r.get<int>(c, "layer"));
      ARCH_TRY(k.kv_heads, r.get<int64_t>(c, "kv_heads"));
      ARCH_TRY(k.head_dim, r.get<int64_t>(c, "head_dim"));
      ARCH_TRY(k.capacity, r.get<int64_t>(c, "capacity"));
      ARCH_TRY(k.dtype, r.get<std::string>(c, "dtype"));
      if (c["window"]) {
        ARCH_TRY(k.window, r.get<int64_t>(c, "window"));
      }
      if (k.kv_heads <= 0 || k.head_dim <= 0 || k.capacity <= 0 || k.window < 0)
        return r.fault(c, "a cache's sizes must be positive");
      p.caches.push_back(k);
    }
    ARCH_TRY(auto states, r.seq(root, "states", true));
    for (const auto& n : states) {
      State st;
      ARCH_TRY(st.index, r.get<int>(n, "index"));
      ARCH_TRY(st.kind, r.get<std::string>(n, "kind"));
      ARCH_TRY(std::vector<int64_t> shape, r.get<std::vector<int64_t>>(n, "shape"));
      ARCH_TRY(st.dtype, r.get<std::string>(n, "dtype"));
      st.shape = Dims(shape.begin(), shape.end());
      if (st.index != int(p.states.size())) return r.fault(n, "states must be listed by index from 0");
      if ((st.kind == "conv" && shape.size() != 2) || (st.kind == "recurrent" && shape.size() != 3) ||
          (st.kind != "conv" && st.kind != "recurrent"))
        return r.fault(n, "a state is conv [kernel - 1, channels] or recurrent [heads, key dim, value dim], not '" + st.kind +
                              "' of " + std::to_string(shape.size()) + " dims");
      for (int64_t d : shape)
        if (d <= 0) return r.fault(n, "a state's sizes must be positive");
      if (st.dtype != "bf16" && st.dtype != "f32") return r.fault(n, "a state's dtype is bf16 or f32, not '" + st.dtype + "'");
      p.states.push_back(st);
    }
    ARCH_TRY(auto units, r.seq(root, "units"));
    for (const auto& u : units) {
      ARCH_TRY(Unit unit, parse_unit(r, u));
      for (const auto* slots : {&unit.reads, &unit.writes})
        for (const auto& s : *slots)
          if (s.buffer != "cache" && !p.buffer(s.buffer))
            return r.fault(u, unit.kind + " unit of " + unit.block + ": buffer '" + s.buffer + "' is not declared");
      if (unit.kind == "attention" || unit.kind == "kv_write") {
        const int64_t layer = unit.attrs.value("layer", int64_t(-1));
        if (layer < 0 || layer >= int64_t(p.caches.size()))
          return r.fault(u, unit.kind + " unit of " + unit.block + ": layer " + std::to_string(layer) + " has no cache (" +
                                std::to_string(p.caches.size()) + " listed)");
      }
      if (unit.kind == "conv" || unit.kind == "delta_rule") {
        const int64_t index = unit.attrs.value("state", int64_t(-1));
        const char* kind = unit.kind == "conv" ? "conv" : "recurrent";
        if (index < 0 || index >= int64_t(p.states.size()) || p.states[size_t(index)].kind != kind)
          return r.fault(u, unit.kind + " unit of " + unit.block + ": state " + std::to_string(index) + " is not a listed " +
                                kind + " state");
      }
      p.units.push_back(std::move(unit));
    }
  } catch (const YAML::Exception& e) {
    return Error{where + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg};
  }
  return p;
}

Result<Program> read_program(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot read the program"};
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_program(ss.str(), path);
}

}  // namespace arch::npu2

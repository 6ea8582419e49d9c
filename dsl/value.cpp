#include "dsl/value.h"

#include <sstream>

#include "engine/core/shape.h"

namespace arch::dsl {

std::string Val::path_str() const {
  std::string out;
  for (size_t k = 0; k < path.size(); ++k) out += (k ? "." : "") + path[k];
  return out;
}

std::string Val::describe() const {
  switch (kind) {
    case Null: return "null";
    case Int: return "int " + std::to_string(i);
    case Float: { std::ostringstream o; o << "float " << f; return o.str(); }
    case Bool: return b ? "bool true" : "bool false";
    case Str: return "str \"" + s + "\"";
    case List: return "a list of " + std::to_string(list.size());
    case Json: return "a json object";
    case Tensor: return "a tensor";
    case Path: return "the weight path " + path_str();
    case Seq: return "the run-time dim " + dim_symbol_name(int(i));
  }
  return "?";
}

nlohmann::json Val::to_json() const {
  switch (kind) {
    case Int: return i;
    case Float: return f;
    case Bool: return b;
    case Str: return s;
    case Json: return json;
    case Seq: return -i;  // as shape attributes spell run-time dims: -1 seq, -4 on named ones
    case List: {
      auto a = nlohmann::json::array();
      for (auto& v : list) a.push_back(v.to_json());
      return a;
    }
    default: return nullptr;
  }
}

Val val_from_json(const nlohmann::json& j) {
  if (j.is_null()) return Val{};
  if (j.is_boolean()) return Val::of_bool(j.get<bool>());
  if (j.is_number_integer()) return Val::of_int(j.get<long long>());
  if (j.is_number()) return Val::of_float(j.get<double>());
  if (j.is_string()) return Val::of_str(j.get<std::string>());
  if (j.is_array()) {
    Val v;
    v.kind = Val::List;
    for (auto& e : j) v.list.push_back(val_from_json(e));
    return v;
  }
  Val v;
  v.kind = Val::Json;
  v.json = j;
  return v;
}

}  // namespace arch::dsl

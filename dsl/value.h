// What an expression evaluates to while a template is instantiated: a
// compile-time constant (config values, flags, loop indices), a weight path
// not yet bound, or a tensor value of the graph being built.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace arch::dsl {

struct Val {
  enum Kind { Null, Int, Float, Bool, Str, List, Json, Tensor, Path, Seq };
  Kind kind = Null;
  long long i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<Val> list;
  nlohmann::json json;
  int tensor = -1;              // value id in the graph (Seq: i is the Dim sym, engine/core/shape.h)
  bool transposed = false;      // W^T, consumed by '@'
  std::vector<std::string> path;  // weight path segments
  int space = 0;                  // Path: the namespace its names are in (0: the template's own)

  static Val of_int(long long v) { Val x; x.kind = Int; x.i = v; return x; }
  static Val of_float(double v) { Val x; x.kind = Float; x.f = v; return x; }
  static Val of_bool(bool v) { Val x; x.kind = Bool; x.b = v; return x; }
  static Val of_str(std::string v) { Val x; x.kind = Str; x.s = std::move(v); return x; }
  static Val of_tensor(int id) { Val x; x.kind = Tensor; x.tensor = id; return x; }

  bool is_number() const { return kind == Int || kind == Float; }
  double num() const { return kind == Int ? double(i) : f; }
  std::string path_str() const;
  std::string describe() const;   // for messages: "int 64", "tensor", ...
  nlohmann::json to_json() const;
};

// A config.json value as a template value (objects stay json).
Val val_from_json(const nlohmann::json& j);

}  // namespace arch::dsl

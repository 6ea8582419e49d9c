// The IR: a typed graph of ops in SSA form. Every value is named for where
// the template made it (`layers.3.attn_norm`), so dumps and diffs can point
// at it; weights are values bound by checkpoint tensor name.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/op.h"
#include "engine/core/shape.h"

namespace arch {

struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
};
// "llama.arch:76:10", as messages name a place in a template.
inline std::string str(const SourceLoc& l) {
  return l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col);
}

struct Value {
  std::string name;
  TypedShape type;
  int producer = -1;   // node index; -1 for inputs, weights, constants
  SourceLoc loc;
};

struct Node {
  std::string op;
  std::vector<int> inputs;   // value ids; -1 for an absent optional input
  std::vector<int> outputs;  // value ids
  Attrs attrs;               // every attribute, defaults filled in
  SourceLoc loc;
};

struct WeightRef {
  int value = -1;
  std::string tensor;        // the checkpoint tensor bound to it
  std::string declared_as;   // its name in the template, if an alias ("lm_head.weight")
  SourceLoc loc;             // where the template declares it
  // Where a graph first reads it, through the blocks that led there:
  // "rms_norm's weight in norm (families/llama.arch:76:10) <- norm_of
  // (families/llama.arch:82:10) <- step (families/llama.arch:170:9)".
  std::string read_at;
  Part part;                 // the ranges of it bound (a graph split over processes); whole: all of it
};

struct GraphOutput {
  std::string name;   // as transformers names it: logits, last_hidden_state, ...
  int index = -1;     // >= 0: one slice of a stacked output (layer_outputs[i])
  int value = -1;
};

struct Graph {
  std::string family;
  std::string name;                      // the template's graph: "step"
  std::vector<Value> values;
  std::vector<Node> nodes;               // in execution order
  std::vector<int> inputs;               // value ids, in declaration order
  // The inputs declared `state`: a session holds each once given, and what
  // is computed from them (and weights) alone is computed once per session.
  std::vector<int> held_inputs;
  std::vector<WeightRef> weights;
  std::vector<GraphOutput> outputs;
  // Inputs a call may leave out (`speaking_rate: f32[] = speaking_rate`):
  // then filled with `number`, or, where `absent`, left absent for the op's
  // optional input that reads it (recorded noise).
  struct InputDefault {
    int value = -1;
    bool absent = false;
    double number = 0;
  };
  std::vector<InputDefault> input_defaults;

  int add_value(Value v) {
    values.push_back(std::move(v));
    return int(values.size()) - 1;
  }
  const WeightRef* weight_of(int value) const;
  // The number a value is where a `constant` op makes it a scalar (the
  // 8.0 of `x * 8.0`); none otherwise.
  std::optional<double> number_of(int value) const;
  // A weight plus a number, computed once at load (a norm's `w + 1`): the
  // weight's value and the number; none otherwise.
  std::optional<std::pair<int, double>> weight_plus_number(int value) const;
  int find_value(const std::string& name) const;  // -1 when absent
  int find_input(const std::string& name) const;
  bool is_held(int value) const;
  const InputDefault* default_of(int value) const;  // null: the input is required
  // Whether input `value` may be left out (`= null`: an op's optional input,
  // a state input the graph runs without).
  bool may_be_absent(int value) const {
    const InputDefault* d = default_of(value);
    return d && d->absent;
  }
};

// "i32[seq]": a value's type as dumps print it.
std::string type_str(const TypedShape& t);
// "tokens: i32[seq]", or "state memory: f32[src, 64]" for a held input.
std::string input_decl(const Graph& g, int value);

// Stable, diff-friendly text of a graph (archc dump).
std::string print_graph(const Graph& g);

}  // namespace arch

// The NPU2 engine's program (seeds/003): the units a decoder's step runs,
// in the order the engine takes them, each with the buffers it reads and
// writes, the checkpoint tensors (and row ranges of them) its constants
// are bound to, and the IR values it computes. It is text (YAML, stable and
// diffable): `archc lower` writes it, the emulator reads it back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/op.h"
#include "engine/core/tensor.h"

namespace arch::npu2 {

// Rows [begin, end) of a checkpoint tensor: one part of a constant.
struct TensorView {
  std::string tensor;
  int64_t begin = 0, end = 0;
};

// A constant a unit reads: its parts stacked by rows in order (a merged
// Q/K/V matrix is three views), on the engine as `dtype`.
struct Constant {
  std::string role;                // weight, bias, table
  std::vector<TensorView> parts;
  Dims shape;                      // the whole constant's
  std::string dtype = "bf16";
  // Added to every element of the weight as stored (rounded to dtype), the
  // sum held in f32: a weight the template computes once as w + c (Gemma's
  // norms' 1 + w, which transformers adds in float32 too). A norm's weight:
  // a row, so f32 costs nothing.
  double offset = 0;
};

// Columns [begin, end) of each row of a buffer (end 0: all of them).
struct Slot {
  std::string buffer;
  int64_t begin = 0, end = 0;
};

struct Unit {
  std::string kind;                // embedding, rms_norm, matvec, head_norm, rope, kv_write, attention, output_gate, conv,
                                   // gates, delta_rule, gated_norm, add, swiglu, softcap, argmax, advance
  std::string block;               // layers.0.mixer, ...: the block of the step graph it belongs to
  std::vector<Slot> reads, writes;
  std::vector<Constant> constants;
  nlohmann::json attrs = nlohmann::json::object();  // eps, heads, theta, layer, ...
  std::vector<std::string> values; // the IR values it computes, by name (the last is what it writes)
  std::vector<std::string> ops;    // the IR ops it runs, in order
  std::string at;                  // file:line of the template op it starts from
  bool last_row = false;           // a prompt chunk runs it on its last row only (final norm, head)
};

inline Unit unit(std::string kind, std::string block) {
  Unit u;
  u.kind = std::move(kind);
  u.block = std::move(block);
  return u;
}

struct Buffer {
  std::string name;
  std::string dtype;               // bf16, f32, i32
  int64_t width = 0;               // elements per row; rows: the version's chunk
};

// One attention layer's KV cache, sized once by the maximum context.
struct Cache {
  int layer = 0;
  int64_t kv_heads = 0, head_dim = 0, capacity = 0;
  std::string dtype = "bf16";
  // A sliding window's layer keeps the last `window` positions and a
  // prompt chunk's rows (capacity window + chunk - 1, when that is less
  // than the context): position p in row p % capacity. 0: no window.
  int64_t window = 0;
};

// A recurrent layer's state, a fixed size per conversation (a Gated-DeltaNet
// block's): the convolution's last inputs ("conv": [kernel - 1, channels])
// or the delta rule's matrices ("recurrent": [value heads, key dim, value
// dim]); zeros at a conversation's start.
struct State {
  int index = 0;                   // the units' `state` attribute
  std::string kind;                // conv, recurrent
  Dims shape;
  std::string dtype = "f32";
};

struct Version {
  std::string name;                // decode, prompt
  int64_t chunk = 1;               // rows compiled for; a prompt call's `rows` runs that many or fewer
};

struct Program {
  std::string target = "npu2";
  std::string family, template_file, graph, profile;
  int64_t max_context = 0;
  std::vector<Version> versions;
  std::vector<std::string> carried = {"token", "position"};
  std::vector<Buffer> buffers;
  std::vector<Cache> caches;
  std::vector<State> states;
  std::vector<Unit> units;
  nlohmann::json numerics = nlohmann::json::object();  // the profile as lowering applied it

  const Buffer* buffer(const std::string& name) const;
  int64_t chunk_of(const std::string& version) const;  // 0: no such version
};

// What --check holds a unit to: the profile's `check` bound as lowering
// recorded it in the program's numerics (2^-6 and 1e-3 where it has none).
Tolerance check_tolerance(const Program& p);

// The program as YAML text (every field, in a fixed order).
std::string program_yaml(const Program& p);
// Reads program_yaml's text back; errors name `where` and the field.
Result<Program> parse_program(const std::string& text, const std::string& where);
Result<Program> read_program(const std::string& path);

}  // namespace arch::npu2

// Lowering (seeds/003): a decoder's instantiated step graph read block by
// block into the NPU2 engine's units. Each op of a block is checked three
// ways before the block is written: its kind, the values it reads and
// writes (each block reads the residual the block before it left), and the
// checkpoint tensor and row range each constant is bound to. What a block
// does that the engine has no unit for is refused by name. It reads the IR
// only: no family's name decides anything.
#pragma once

#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/npu2/profile.h"
#include "engine/npu2/program.h"

namespace arch::npu2 {

struct LowerOptions {
  int64_t max_context = 2048;  // the KV caches' rows, sized once
  int64_t chunk = 64;          // the prompt version's rows
  Profile profile;
  std::string family, template_file;  // for the program's header
};

// Why a step graph is not a program the engine runs: one per thing it has
// no unit for.
struct Refusal {
  std::string block;   // embedding, layers.3.mixer, layers.3.ffn, head, graph
  std::string op;      // "h#2 = mul" : the value and its op
  std::string at;      // file:line of the template op
  std::string reason;  // what the graph does
  std::string needed;  // what the engine would need to run it
};

struct Lowering {
  Program program;
  std::vector<Refusal> refusals;  // empty: the program is whole
};

Lowering lower(const Graph& step, const LowerOptions& opt);

// "archc: ... the engine has no unit for ...": the refusals as a table.
std::string refusal_table(const std::vector<Refusal>& refusals);

}  // namespace arch::npu2

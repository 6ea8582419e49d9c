// The op vocabulary. Each op is defined once (kernels/reference/<op>.cpp):
// its inputs, attributes, shape rule, reference kernel and tolerance. Fast
// kernels register against the same name for another backend.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/collectives.h"
#include "engine/core/error.h"
#include "engine/core/shape.h"
#include "engine/core/split.h"
#include "engine/core/tensor.h"

namespace arch {

// Attributes are a JSON object: printable, comparable, and able to carry a
// config's structured fields (rope_scaling) unchanged.
using Attrs = nlohmann::json;

struct TypedShape {
  DType dtype = DType::F32;
  Shape shape;
};

// Per-instance state an op keeps across calls of one session (a KV cache).
struct OpState {
  virtual ~OpState() = default;
  // Whether it can forget what came after the first `positions` (a chat
  // turn whose text differs from what the session holds), and doing so.
  virtual bool can_rewind(int64_t positions) const { return false; }
  virtual void rewind(int64_t positions) {}
  // A copy to run the reference kernel on beside the fast one (--check);
  // null: this state is not copied (a KV cache), the op goes unchecked.
  virtual std::unique_ptr<OpState> clone() const { return nullptr; }
  // Rows [from, from + n) copied over rows [to, to + n): one sequence's
  // region of a batched session's state onto another's (a beam taking over
  // another's history); false: this state cannot.
  virtual bool copy_rows(int64_t from, int64_t to, int64_t n) { return false; }
};

// How a model's kernels compute, chosen when it is loaded (per program,
// never process-wide): two models in one process may differ.
struct KernelOptions {
  bool bf16_activations = false;  // matmuls on BF16 weights round their activations to bf16 (llama.cpp's arithmetic);
                                  // convolutions may multiply in bf16 where the CPU has it
  bool kv_f16 = false;            // KV caches keep their rows as F16 (half the memory)
  // The processes a model split over several runs with (engine/distributed):
  // what all_reduce and all_gather call. Null: one process.
  Collectives* collectives = nullptr;
};
inline const KernelOptions kDefaultKernelOptions{};

// Rows of one call that belong to different sequences (continuous
// batching): each sequence has a region of `slot_capacity` positions in the
// KV caches (region `slot`), and its piece of the call is rows [row, row +
// rows) at positions [position, position + rows). The ops that mix positions
// (kv_cache, attention) keep to each piece's region; the rest are row by row.
// An encoder-decoder's sequences each hold an encoder output of their own:
// the held values are every slot's rows one after another, slot s's at
// held[s] ([from, from + length)), and a step reading them (cross-attention
// over keys made from them) sees `over_held` set: its pieces attend over
// their slot's held rows, all of them.
struct SequenceRows {
  struct Piece {
    int64_t slot = 0, position = 0, row = 0, rows = 0;
  };
  struct Region {
    int64_t from = 0, length = 0;
  };
  int64_t slot_capacity = 0;
  std::vector<Piece> pieces;
  std::vector<Region> held;  // by slot
  bool over_held = false;
};

struct KernelContext {
  const Attrs& attrs;
  std::span<const Tensor> inputs;     // an absent optional input has data == nullptr
  std::vector<Tensor>& outputs;       // preallocated, zero-filled, concrete shapes
  std::unique_ptr<OpState>& state;    // this op instance's state, owned by the session
  int64_t max_context = 0;            // cache capacity a stateful op sizes itself to
  const std::string& where;           // the value's name, for messages
  const KernelOptions* options = &kDefaultKernelOptions;  // the model's (never null)
  const SequenceRows* sequences = nullptr;                // set: the rows are several sequences'
};

using Kernel = std::function<Status(KernelContext&)>;
// Which stored element types a fast kernel reads directly at input `i`: a
// weight read only by such kernels stays as the checkpoint stores it
// (memory-mapped BF16, a quantized block format) instead of being widened to
// F32 at load.
using TakesStored = std::function<bool(const Attrs& attrs, size_t input, DType stored)>;
// The prepare-weight hook: the layout (Tensor::layout, registered with
// register_layout) in which a fast kernel would read the weight at input
// `i`, stored as `stored`; 0: as stored; kAnyLayout: whichever the other
// readers ask for (it reads rows through widen_row). A weight every reader
// of which asks for one layout (or any) is rearranged into it once, at load.
using PrepareWeight = std::function<uint8_t(const Attrs& attrs, size_t input, const Tensor& stored)>;
constexpr uint8_t kAnyLayout = 255;
// The rows as stored, copied from the checkpoint's mapping onto the weight
// arena's 2 MiB pages (engine/core/weight_arena.h): for a kernel that streams the
// whole matrix on every call, where a mapped file's 4 KiB pages cost a TLB
// miss and a stopped hardware prefetcher every 4 KiB. The tensor keeps
// layout 0.
constexpr uint8_t kResidentRows = 254;

// Shape rule: output types from input types (an absent optional input has an
// empty shape and `present[i] == false`) and attributes.
using ShapeRule =
    std::function<Result<std::vector<TypedShape>>(std::span<const TypedShape> in,
                                                  std::span<const bool> present, const Attrs&)>;

// Shape rule of an op whose output size depends on its inputs' values
// (expand_by_durations: as many frames as the durations add up to): the
// output types from the call's concrete inputs. Its instantiation-time rule
// gives such a dim as `_`.
using ValueShapeRule =
    std::function<Result<std::vector<TypedShape>>(std::span<const Tensor> in, const Attrs&)>;

struct AttrSpec {
  std::string name;
  enum Kind { Int, Float, Bool, Str, Json, IntList } kind = Int;
  nlohmann::json default_value;  // null: required
  // Set only by the planner (matmul's folded activation): a template may
  // not write it, and instantiation leaves it out rather than defaulting it.
  bool planner_only = false;
};

struct Tolerance {
  double rel = 1e-5;  // relative to the reference tensor's max |value|
  double abs = 1e-6;
};

// The bound --check holds a fast kernel to on these inputs, where it
// computes differently by design (a quantized weight's kernel quantizes the
// activations too); given the op's own tolerance.
using CheckTolerance = std::function<Tolerance(const Tolerance& op, std::span<const Tensor> inputs)>;

struct OpDef {
  std::string name;
  std::vector<std::string> inputs;  // names; a trailing '?' marks an optional input, a
                                    // trailing '*' (last only) any number of them (stack)
  std::vector<AttrSpec> attrs;
  int num_outputs = 1;
  ShapeRule shape;
  ValueShapeRule value_shape = nullptr;  // set only where an output's size is data-dependent
  Tolerance tolerance;
  bool stateful = false;  // keeps an OpState across calls (KV cache)
  // A stateful op that keeps each sequence of a batched call (SequenceRows)
  // apart, so a batched session may run it.
  bool sequences = false;
  // A stateful op whose state is the same size at any position (a
  // recurrent state): its bytes per sequence, from its inputs' and
  // outputs' types. Null: the state grows with the positions (kv_cache).
  std::function<int64_t(std::span<const TypedShape> in, std::span<const TypedShape> out)> state_bytes = nullptr;
  bool view = false;      // output aliases input 0 (reshape): no allocation
  bool fills = false;     // the reference kernel writes every output element: outputs need no zeroing
  // Its outputs hold its inputs' values moved, none computed (reshape,
  // slice, transpose, concat, stack): a value folded at load from weights
  // stored as BF16 or F16 is exact in that type (interpreter.cpp).
  bool moves_values = false;
  // Waits for another process (a pipeline stage's recv): a graph that hands
  // work on and then waits can run in two parts (ModelGraph::front, back).
  bool waits = false;
  // The sequence length past which this op's outputs at earlier positions
  // change (LongRoPE's switch to its long factors), so state cached from
  // them is recomputed there (engine/runtime/session.h); null or 0: never.
  std::function<int64_t(const Attrs&)> history_changes_past = nullptr;
  // How it makes a part of its outputs from parts of its inputs (split.h);
  // null: only whole (a graph split over processes computes it whole).
  SplitRule split = nullptr;
  std::string doc;        // one line: what it computes
};

class OpTable {
 public:
  void define(OpDef def, Kernel reference);
  // `fills`: the kernel writes every element of its outputs (on every path,
  // its fallbacks included), so they need not be zeroed first.
  void add_kernel(const std::string& op, const std::string& backend, Kernel k, TakesStored takes = nullptr,
                  CheckTolerance check = nullptr, bool fills = false);

  // The prepare-weight hook of `backend`'s kernel for `op`.
  void add_weight_layout(const std::string& op, const std::string& backend, PrepareWeight prepare);

  const OpDef* find(const std::string& name) const;
  // The kernel for `backend`, else the reference one.
  const Kernel* kernel(const std::string& op, const std::string& backend) const;
  std::vector<std::string> names() const;
  // F32 always; else what the backend's own kernel declared.
  // The op's tolerance, or what the backend's kernel declared for these inputs.
  Tolerance check_tolerance(const std::string& op, const std::string& backend, std::span<const Tensor> inputs) const;
  bool takes_stored(const std::string& op, const std::string& backend, const Attrs& attrs, size_t input,
                    DType stored) const;
  // The layout `backend`'s kernel for `op` reads input `input` in, stored
  // as `stored` (0: as stored, or no hook).
  uint8_t weight_layout_for(const std::string& op, const std::string& backend, const Attrs& attrs, size_t input,
                            const Tensor& stored) const;
  // Whether the kernel `kernel(op, backend)` gives writes every output
  // element (reference kernels may accumulate into zeroed outputs).
  bool fills_outputs(const std::string& op, const std::string& backend) const;

 private:
  std::map<std::string, OpDef> defs_;
  std::map<std::string, std::map<std::string, Kernel>> kernels_;
  std::map<std::string, std::map<std::string, TakesStored>> takes_;
  std::map<std::string, std::map<std::string, CheckTolerance>> check_;
  std::map<std::string, std::map<std::string, bool>> fills_;
  std::map<std::string, std::map<std::string, PrepareWeight>> prepare_;
};

}  // namespace arch

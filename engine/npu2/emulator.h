// An emulator of the NPU2 engine's units, running a lowered program with
// the engine's numerics: constants rounded to their type once at load,
// each unit computing in f32 (its ops' reference kernels) and rounding once
// as it stores into a buffer of its type; one KV cache per attention layer
// sized once by the program's maximum context; the token and position
// carried from call to call; a decode version (one row) and a prompt-chunk
// version whose `rows` bounds how much of its chunk a call runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/op.h"
#include "importer/checkpoint/checkpoint.h"
#include "engine/npu2/program.h"

namespace arch::npu2 {

// What --check saw: each unit's output against its ops' f32 reference
// (the IR's own weights, by the values the unit says it computes).
struct UnitCheck {
  int64_t checked = 0;
  int64_t skipped = 0;               // bounded per call (a prompt chunk's rows), or state only
  std::map<std::string, int64_t> skipped_why;
  std::vector<std::string> skipped_units;  // each unit a prompt call left unchecked, once
  double worst = 0;                  // the largest miss seen, as a share of its bound
};

class Emulator {
 public:
  // Binds every constant to the checkpoint's tensors (rows as the program's
  // views say), rounded to the constant's type; sizes buffers and caches.
  static Result<std::unique_ptr<Emulator>> load(const Program& p, const Checkpoint& ckpt, const OpTable& ops);

  // --check: compare each unit with its ops' reference, the constants taken
  // from `step`'s own weight bindings; the first miss is an error naming it.
  void check_against(const Graph& step, UnitCheck* log, const Tolerance& tol);

  // A conversation's start: the carried values.
  void seed(int32_t token, int64_t position);
  // The prompt version on `ids` (at most the chunk; rows = ids.size()).
  Status prompt(std::span<const int32_t> ids);
  // The decode version: one row, from the carried token.
  Status decode();

  int32_t token() const { return token_; }
  int64_t position() const { return position_; }
  std::span<const float> logits() const;  // the last call's last row
  const Program& program() const { return p_; }

 private:
  Status run(const std::string& version, int64_t rows);
  Status run_unit(size_t index, const Unit& u, int64_t rows, bool bounded);
  // `state`: a recurrent unit's (conv, delta_rule), carried across calls.
  Result<std::vector<Tensor>> compute(const Unit& u, const std::vector<Tensor>& in, const std::vector<Tensor>& constants,
                                      int64_t rows, int64_t first_row, std::unique_ptr<OpState>* state = nullptr) const;
  Result<Tensor> read(const Slot& s, int64_t first_row, int64_t rows) const;
  void store(const Slot& s, const Tensor& t, int64_t first_row);
  Result<std::vector<Tensor>> reference_constants(const Unit& u) const;

  Program p_;
  const OpTable* ops_ = nullptr;
  const Checkpoint* ckpt_ = nullptr;
  std::map<std::string, Tensor> buffers_;        // by name: [max chunk, width] in the buffer's type
  std::vector<Tensor> cache_k_, cache_v_;        // by layer: [capacity, kv_heads, head_dim]
  std::vector<std::vector<Tensor>> constants_;   // by unit
  std::vector<std::unique_ptr<OpState>> states_; // by state: the reference kernels' own (zeros at a conversation's start)
  int32_t token_ = 0;
  int64_t position_ = 0;
  const Graph* check_graph_ = nullptr;
  UnitCheck* check_ = nullptr;
  Tolerance tol_;
};

// Greedy generation on the emulator: the prompt in chunks, then a decode
// call per token until `max_new` or a stop id; `on_token` per new token.
Result<std::vector<int32_t>> emulate_greedy(Emulator& e, const std::vector<int32_t>& prompt, int max_new,
                                            const std::vector<int32_t>& stop_ids,
                                            const std::function<void(int32_t)>& on_token = nullptr);

}  // namespace arch::npu2

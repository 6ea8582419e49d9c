// A session: every graph of one model run on named inputs, with the state
// the template declares kept between calls (seeds/002): one KV cache per
// kv_cache op, sized once, at a position carried from call to call; and the
// inputs declared `state` (an encoder's output), held once given, with what
// is computed from them alone (cross-attention K/V) computed once.
//
//   Session s(model, {.max_context = 512});
//   auto out = s.run("step", {{"tokens", ids}}, {"logits"});   // a prompt chunk
//   auto next = s.step(std::vector<int32_t>{tok});              // one decode step
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/model.h"
#include "engine/runtime/thread_governor.h"

namespace arch {

using NamedTensors = std::map<std::string, Tensor>;

// An input as the graph input `want` takes it: a leading batch dim of 1
// dropped, I64 ids narrowed to I32; an error names it otherwise.
Result<Tensor> conform_input(const std::string& name, Tensor t, const Value& want);

struct SessionOptions {
  int64_t max_context = 0;   // positions the KV caches hold (0: as many as the first call brings)
  // Decode steps' threads governed up to this many (0: the count is left
  // as set; engine/runtime/thread_governor.h).
  int adaptive_threads = 0;
};

class Session {
 public:
  Session(const Model& m, SessionOptions opt = {});
  Session(const Model& m, int64_t max_context) : Session(m, SessionOptions{max_context, 0}) {}
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const Model& model() const { return m_; }

  // Runs graph `graph` (empty: the model's first) on `inputs` by its input
  // names and returns the outputs named (stacked ones, layer_outputs[i],
  // along a new first axis). Inputs come as transformers gives them: a
  // leading batch dim of 1 is dropped, I64 ids are narrowed to I32. A graph
  // with a KV cache runs at the session's position and advances it by its
  // `seq`; its `positions`, when not given, are that position on. A `state`
  // input may be left out once given. `last_only`: `logits` for the last
  // position only (all generation needs).
  Result<NamedTensors> run(const std::string& graph, NamedTensors inputs,
                           const std::vector<std::string>& outputs = {"logits"}, bool last_only = false);
  // The same, returning the values `keep` names by id (archc diff keeps
  // every one).
  Result<std::map<int, Tensor>> run_values(const ModelGraph& g, NamedTensors inputs, const std::vector<int>& keep,
                                           bool last_only = false);

  // The token graph (Model::token_graph) on token ids: a prompt chunk, or
  // one token for a decode step. An encoder-decoder's first step also
  // takes what encode() made. A step taking the sequence past a length
  // where the model's earlier positions change (ModelGraph::
  // history_changes_past: LongRoPE) runs the whole sequence again, its
  // outputs still those of `ids`' positions.
  Result<NamedTensors> step(std::span<const int32_t> ids, const std::vector<std::string>& outputs = {"logits"},
                            bool last_only = false);

  // An encoder-decoder: runs the graphs that make the token graph's state
  // inputs (the encoder) on `inputs` by their input names, and hands those
  // outputs to the next step, which holds them from then on (cross-
  // attention K/V computed once). The KV caches start over: a new input
  // is a new request. Returns everything those graphs were asked for:
  // the state, and `also` where they have it.
  Result<NamedTensors> encode(NamedTensors inputs, const std::vector<std::string>& also = {});
  // A new request over state encode() made before (a retry of the same
  // audio window, a beam of its own): the KV caches start over and the
  // next step takes `state`.
  void begin(NamedTensors state);

  // --check: every fast step compared with its op's reference kernel.
  void check_with(CheckStats* stats);
  // Time every kernel call into `profile` (null: stop).
  void profile_with(OpProfile* profile);

  int64_t position() const { return position_; }
  int64_t max_context() const { return max_context_; }
  const BufferPool& buffers() const { return *buffers_; }
  // Forget every position from `n` on (a chat turn whose text differs from
  // what the session holds there): the next call runs at n. A recurrent
  // state (causal_conv1d, gated_delta_rule) goes back only to 0: to
  // anywhere else it is an error, and nothing changes.
  Status rewind(int64_t n);
  // Keep a copy of the recurrent states as they are now (the end of a chat
  // turn's prompt), so the session can come back here; the KV caches need
  // none. One mark at a time.
  void mark();
  // Go back to position n where every state can, else to the mark if it is
  // at or before n, else to the start; returns the position it went to (the
  // caller runs the tokens from there to n again).
  Result<int64_t> back_to(int64_t n);
  void reset();
  // The decode steps' thread governor, when adaptive_threads was on at
  // construction (null otherwise).
  const ThreadGovernor* governor() const { return governor_.get(); }

 private:
  RunState& state_of(const ModelGraph& g);
  // Tells the model's other processes (Model::mirror), where there are any;
  // the lock is held until the call is done here.
  std::unique_lock<std::recursive_mutex> tell(SessionCall call);
  bool rewind_here(int64_t n);  // rewind()'s change alone, told no one

  const Model& m_;
  int64_t max_context_ = 0;
  int64_t position_ = 0;
  std::map<const ModelGraph*, RunState> states_;  // one per graph run so far
  NamedTensors pending_state_;                     // encode()'s outputs, for the next step
  // The tokens step() has run at positions 0.., kept only for a model whose
  // cache is recomputed at some length (ModelGraph::history_changes_past);
  // unknown once the token graph ran on tokens given otherwise.
  std::vector<int32_t> history_;
  // mark(): its position, and a copy of each graph's recurrent states by
  // slot (null where a state needs none: a KV cache).
  int64_t mark_position_ = -1;
  std::map<const ModelGraph*, std::vector<std::unique_ptr<OpState>>> marked_;
  bool history_known_ = true;
  bool stepping_ = false;
  std::shared_ptr<BufferPool> buffers_ = BufferPool::make();  // shared by the graphs' runs
  CheckStats* check_ = nullptr;
  OpProfile* profile_ = nullptr;
  std::unique_ptr<ThreadGovernor> governor_;
  int64_t id_ = 0;  // as the mirror numbers it
  bool quiet_ = false;  // run_values tells no one (the second part of a cut graph: rank 0's alone)
  // step() through a token graph cut where it waits, in chunks; the
  // outputs' last `last_rows` positions only (0: all).
  Result<NamedTensors> step_in_chunks(const ModelGraph& tg, std::span<const int32_t> ids,
                                      const std::vector<std::string>& outputs, bool last_only, int64_t last_rows);
};

}  // namespace arch

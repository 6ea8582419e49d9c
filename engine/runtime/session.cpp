#include "engine/runtime/session.h"

#include <algorithm>
#include <cstring>

#include "kernels/kernels.h"
#include "engine/runtime/graph_outputs.h"

namespace arch {

namespace {

// Each value running over the call's positions (a `seq` dim) cut to its
// last n positions: what a step of n tokens returns when it ran more.
void keep_last_positions(const Graph& g, std::map<int, Tensor>& vals, int64_t n) {
  for (auto& [v, t] : vals) {
    const Shape& declared = g.values[size_t(v)].type.shape;
    size_t axis = 0;
    while (axis < declared.size() && declared[axis].sym != kSeqSym) ++axis;
    if (axis == declared.size() || axis >= t.shape.size() || t.shape[axis] <= n) continue;
    Dims shape = t.shape;
    const int64_t rows = shape[axis];
    shape[axis] = n;
    Tensor cut = Tensor::zeros(t.dtype, shape);
    int64_t outer = 1, inner = int64_t(dtype_size(t.dtype));
    for (size_t d = 0; d < axis; ++d) outer *= t.shape[d];
    for (size_t d = axis + 1; d < t.shape.size(); ++d) inner *= t.shape[d];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(cut.data) + o * n * inner,
                  static_cast<const char*>(t.data) + (o * rows + rows - n) * inner, size_t(n * inner));
    t = cut;
  }
}

}  // namespace

Session::Session(const Model& m, SessionOptions opt) : m_(m), max_context_(opt.max_context) {
  if (opt.adaptive_threads > 1) governor_ = std::make_unique<ThreadGovernor>(opt.adaptive_threads);
  if (m_.mirror) {
    id_ = m_.mirror->next_id();
    tell({.kind = SessionCall::kOpen, .n = opt.max_context, .m = opt.adaptive_threads});
  }
}

Session::~Session() { tell({.kind = SessionCall::kClose}); }

std::unique_lock<std::recursive_mutex> Session::tell(SessionCall call) {
  if (!m_.mirror) return {};
  call.session = id_;
  return m_.mirror->tell(call);
}

RunState& Session::state_of(const ModelGraph& g) {
  auto [it, fresh] = states_.try_emplace(&g);
  RunState& s = it->second;
  if (fresh) {
    s.buffers = buffers_;
    s.check = check_;
    s.ops = &op_table();
    s.profile = profile_;
  }
  return s;
}

void Session::check_with(CheckStats* stats) {
  check_ = stats;
  for (auto& [g, s] : states_) s.check = stats, s.ops = &op_table();
}

void Session::profile_with(OpProfile* profile) {
  profile_ = profile;
  for (auto& [g, s] : states_) s.profile = profile;
}

void Session::reset() {
  auto told = tell({.kind = SessionCall::kReset});
  states_.clear();
  position_ = 0;
  history_.clear();
  history_known_ = true;
  mark_position_ = -1;
  marked_.clear();
}

Status Session::rewind(int64_t n) {
  if (n < 0 || n > position_)
    return error("cannot rewind to position " + std::to_string(n) + ": the session is at " + std::to_string(position_));
  if (n == position_) return {};
  for (auto& [g, s] : states_)
    for (auto& st : s.states)
      if (st && !st->can_rewind(n))
        return error("cannot go back to position " + std::to_string(n) + ": the model keeps a recurrent state, "
                     "which returns only to the start");
  auto told = tell({.kind = SessionCall::kRewind, .n = n});
  rewind_here(n);
  return {};
}

bool Session::rewind_here(int64_t n) {
  if (n < 0 || n > position_) return false;
  for (auto& [g, s] : states_)
    for (auto& st : s.states)
      if (st && !st->can_rewind(n)) return false;
  for (auto& [g, s] : states_)
    for (auto& st : s.states)
      if (st) st->rewind(n);
  position_ = n;
  if (history_.size() > size_t(n)) history_.resize(size_t(n));
  if (mark_position_ > n) mark_position_ = -1, marked_.clear();
  return true;
}

void Session::mark() {
  auto told = tell({.kind = SessionCall::kMark});
  marked_.clear();
  for (auto& [g, s] : states_) {
    auto& copies = marked_[g];
    for (auto& st : s.states) copies.push_back(st ? st->clone() : nullptr);
  }
  mark_position_ = position_;
}

Result<int64_t> Session::back_to(int64_t n) {
  if (n < 0 || n > position_)
    return error("cannot go back to position " + std::to_string(n) + ": the session is at " + std::to_string(position_));
  auto told = tell({.kind = SessionCall::kBackTo, .n = n});
  if (rewind_here(n)) return n;
  // The mark, if it is at or before n: each state from its copy there, or
  // (a KV cache) by position.
  auto copy_of = [&](const ModelGraph* g, size_t i) -> OpState* {
    auto it = marked_.find(g);
    return it != marked_.end() && i < it->second.size() ? it->second[i].get() : nullptr;
  };
  bool at_mark = mark_position_ >= 0 && mark_position_ <= n;
  for (auto& [g, s] : states_)
    for (size_t i = 0; at_mark && i < s.states.size(); ++i)
      at_mark = !s.states[i] || copy_of(g, i) || s.states[i]->can_rewind(mark_position_);
  if (!at_mark) {
    rewind_here(0);
    return int64_t(0);
  }
  for (auto& [g, s] : states_)
    for (size_t i = 0; i < s.states.size(); ++i) {
      if (OpState* copy = copy_of(g, i)) s.states[i] = copy->clone();  // the mark's own copy stays for next time
      else if (s.states[i]) s.states[i]->rewind(mark_position_);
    }
  position_ = mark_position_;
  if (history_.size() > size_t(position_)) history_.resize(size_t(position_));
  return position_;
}

Result<Tensor> conform_input(const std::string& name, Tensor t, const Value& want) {
  if (t.shape.size() == want.type.shape.size() + 1 && !t.shape.empty() && t.shape[0] == 1)
    t = t.reshaped(Dims(t.shape.begin() + 1, t.shape.end()));
  if (t.dtype == DType::I64 && want.type.dtype == DType::I32) {
    Tensor n = Tensor::zeros(DType::I32, t.shape);
    const auto* src = static_cast<const int64_t*>(t.data);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (src[i] < INT32_MIN || src[i] > INT32_MAX) return error(name + " holds " + std::to_string(src[i]));
      n.i32()[i] = int32_t(src[i]);
    }
    t = n;
  }
  if (t.dtype != want.type.dtype || t.shape.size() != want.type.shape.size())
    return error("input '" + name + "' is " + std::string(dtype_name(t.dtype)) + dims_str(t.shape) +
                 ", the model takes " + std::string(dtype_name(want.type.dtype)) + shape_str(want.type.shape));
  return t;
}

Result<std::map<int, Tensor>> Session::run_values(const ModelGraph& mg, NamedTensors inputs,
                                                  const std::vector<int>& keep, bool last_only) {
  const Graph& g = mg.graph;
  // Tokens given other than through step() leave the history unknown.
  if (&mg == m_.token_graph() && mg.has_kv_cache && !stepping_) history_known_ = false;
  if (!pending_state_.empty() && &mg == m_.token_graph()) {  // what encode() made
    for (auto& [name, t] : pending_state_) inputs.try_emplace(name, t);
    pending_state_.clear();
  }
  for (const auto& [name, t] : inputs)
    if (g.find_input(name) < 0) {
      std::string takes;
      for (int v : g.inputs) takes += (takes.empty() ? "" : ", ") + g.values[v].name;
      return error("graph " + g.name + " takes no input '" + name + "' (it takes: " + takes + ")");
    }
  // The run-time seq: from the given inputs that have it.
  std::map<int, Tensor> feed;
  int64_t seq = -1;
  for (int v : g.inputs) {
    auto it = inputs.find(g.values[v].name);
    if (it == inputs.end()) continue;
    ARCH_TRY(Tensor t, conform_input(it->first, it->second, g.values[v]));
    const Shape& want = g.values[v].type.shape;
    for (size_t d = 0; d < want.size(); ++d) {
      if (want[d].concrete() && t.shape[d] != want[d].n)
        return error("input '" + it->first + "' is " + dims_str(t.shape) + ", the model takes " + shape_str(want));
      if (want[d].sym == kSeqSym) {
        if (seq >= 0 && seq != t.shape[d])
          return error("input '" + it->first + "' has " + std::to_string(t.shape[d]) + " positions, another input " +
                       std::to_string(seq));
        seq = t.shape[d];
      }
    }
    feed[v] = t;
  }
  if (seq == 0) return error("the inputs are empty (no positions)");
  seq = std::max<int64_t>(seq, 0);
  const int64_t at = mg.has_kv_cache ? position_ : 0;
  if (int positions = g.find_input("positions"); positions >= 0 && !feed.count(positions)) {
    Tensor pos = Tensor::zeros(DType::I32, {seq});
    for (int64_t k = 0; k < seq; ++k) pos.i32()[k] = int32_t(at + k);
    feed[positions] = pos;
  }
  for (int v : g.inputs) {
    if (feed.count(v) || g.is_held(v)) continue;
    const Graph::InputDefault* d = g.default_of(v);
    if (!d) return error("input '" + g.values[v].name + "' is missing");
    if (d->absent) continue;  // the op reading it takes it absent
    Tensor t = Tensor::zeros(g.values[v].type.dtype, concretize(g.values[v].type.shape, 0));
    for (int64_t k = 0; k < t.numel(); ++k) {
      if (t.dtype == DType::F32) t.f32()[k] = float(d->number);
      else if (t.dtype == DType::I32) t.i32()[k] = int32_t(d->number);
      else return error("input '" + g.values[v].name + "': a default fills f32 or i32 inputs only");
    }
    feed[v] = t;
  }
  if (mg.has_kv_cache) {
    if (max_context_ <= 0) max_context_ = seq;
    if (position_ + seq > max_context_)
      return error("the context is full: " + std::to_string(position_) + " + " + std::to_string(seq) +
                   " tokens exceed the " + std::to_string(max_context_) + " positions it was sized for");
  }
  RunState& state = state_of(mg);
  state.max_context = mg.has_kv_cache ? max_context_ : std::max<int64_t>(seq, 1);
  const Program& program = last_only && mg.last_logits.graph ? mg.last_logits : mg.program;
  // One token is a decode step, measured by the governor; a prompt chunk
  // runs on the count it has come to (both sum the same on any number).
  const bool decode = mg.has_kv_cache && seq == 1;
  if (governor_) decode ? governor_->begin_decode() : governor_->begin_prompt();
  // (The call, its inputs copied, is made only where there is someone to tell.)
  auto told = quiet_ || !m_.mirror
                  ? std::unique_lock<std::recursive_mutex>()
                  : tell({.kind = SessionCall::kRun, .graph = g.name, .last_only = last_only, .inputs = inputs});
  ARCH_TRY(auto vals, run_program(program, state, feed, DimValues(seq, at + seq), keep));
  if (governor_ && decode) governor_->end_decode();
  if (mg.has_kv_cache) position_ += seq;
  return vals;
}

Result<NamedTensors> Session::run(const std::string& graph, NamedTensors inputs,
                                  const std::vector<std::string>& outputs, bool last_only) {
  ARCH_TRY(const ModelGraph* mg, m_.find_graph(graph));
  ARCH_TRY(std::vector<int> keep, output_values(mg->graph, outputs));
  ARCH_TRY(auto vals, run_values(*mg, std::move(inputs), keep, last_only));
  return collect_outputs(mg->graph, vals, outputs);
}

Result<NamedTensors> Session::step(std::span<const int32_t> ids, const std::vector<std::string>& outputs,
                                   bool last_only) {
  const ModelGraph* tg = m_.token_graph();
  if (!tg) {
    std::string have;
    for (const auto& n : m_.graph_names()) have += (have.empty() ? "" : ", ") + n;
    return error("the model has no graph with a 'tokens' input (it has: " + have + ")");
  }
  if (ids.empty()) return error("a step needs at least one token");
  const int64_t n = int64_t(ids.size());
  // Where this step takes the sequence past a length at which every earlier
  // position's keys change (LongRoPE's switch to its long factors), the
  // cache is recomputed: the whole sequence runs again from position 0, as
  // transformers' Phi-3 drops its cache there.
  bool recompute = false;
  for (int64_t at : tg->history_changes_past)
    recompute = recompute || (position_ > 0 && position_ <= at && position_ + n > at);
  std::vector<int32_t> all;
  if (recompute) {
    if (!history_known_ || history_.size() != size_t(position_))
      return error("the sequence passes a length where the model's rotary embedding changes for every position, "
                   "and the session does not hold the tokens it has seen (they came other than through step()) "
                   "to recompute its cache");
    all = history_;
    all.insert(all.end(), ids.begin(), ids.end());
    if (!rewind(0).ok()) reset();
    ids = all;
  }
  // A token graph cut where it waits (a pipeline's first stage) steps
  // through its two parts, always (their caches are the session's).
  if (tg->front && tg->back) {
    if (max_context_ > 0 && position_ + int64_t(ids.size()) > max_context_)
      return error("the context is full: " + std::to_string(position_) + " + " + std::to_string(ids.size()) +
                   " tokens exceed the " + std::to_string(max_context_) + " positions it was sized for");
    auto held = m_.mirror ? m_.mirror->hold() : std::unique_lock<std::recursive_mutex>();
    ARCH_TRY(auto out, step_in_chunks(*tg, ids, outputs, last_only, recompute ? n : 0));
    if (history_known_ && !tg->history_changes_past.empty()) history_.insert(history_.end(), ids.begin(), ids.end());
    return out;
  }
  Tensor tok = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::memcpy(tok.data, ids.data(), ids.size() * 4);
  ARCH_TRY(std::vector<int> keep, output_values(tg->graph, outputs));
  stepping_ = true;
  auto vals = run_values(*tg, {{"tokens", tok}}, keep, last_only);
  stepping_ = false;
  if (!vals.ok()) return vals.error();
  if (history_known_ && !tg->history_changes_past.empty()) history_.insert(history_.end(), ids.begin(), ids.end());
  if (recompute) keep_last_positions(tg->graph, *vals, n);
  return collect_outputs(tg->graph, *vals, outputs);
}

Result<NamedTensors> Session::step_in_chunks(const ModelGraph& tg, std::span<const int32_t> ids,
                                             const std::vector<std::string>& outputs, bool last_only,
                                             int64_t last_rows) {
  // Every chunk through the part before the wait (each told the other
  // stages as it goes, which work on it while this one goes on to the
  // next), then every chunk through the part after it, which waits for
  // what the last stage sends back: the last chunk's outputs are the
  // step's. Every row's outputs (not last_only) come from one chunk.
  ARCH_TRY(std::vector<int> keep, output_values(tg.back->graph, outputs));
  if (max_context_ <= 0) max_context_ = int64_t(ids.size());
  const size_t even = (ids.size() + size_t(std::max(m_.prompt_chunks, 1)) - 1) / size_t(std::max(m_.prompt_chunks, 1));
  const size_t chunk = last_only && m_.prompt_chunk > 0 ? std::max(size_t(m_.prompt_chunk), even) : ids.size();
  std::vector<Tensor> chunks;
  for (size_t at = 0; at < ids.size(); at += chunk) {
    const size_t len = std::min(ids.size() - at, chunk);
    Tensor tok = Tensor::zeros(DType::I32, {int64_t(len)});
    std::memcpy(tok.data, ids.data() + at, len * 4);
    chunks.push_back(tok);
  }
  // The first part runs as the whole graph would (the others are told
  // the whole graph's name); the second is this process's alone.
  for (const Tensor& tok : chunks) {
    ARCH_TRY(auto none, run_values(*tg.front, {{"tokens", tok}}, {}, false));
  }
  quiet_ = true;
  Result<std::map<int, Tensor>> vals = std::map<int, Tensor>{};
  for (size_t k = 0; k < chunks.size() && vals.ok(); ++k)
    vals = run_values(*tg.back, {{"tokens", chunks[k]}}, k + 1 == chunks.size() ? keep : std::vector<int>{},
                      last_only);
  quiet_ = false;
  if (!vals.ok()) return vals.error();
  if (last_rows > 0) keep_last_positions(tg.back->graph, *vals, last_rows);  // a whole sequence run again
  return collect_outputs(tg.back->graph, *vals, outputs);
}

Result<NamedTensors> Session::encode(NamedTensors inputs, const std::vector<std::string>& also) {
  const ModelGraph* tg = m_.token_graph();
  if (!tg || (!m_.is_encoder_decoder() && m_.optional_state().empty()))
    return error("the model is not an encoder-decoder: no graph makes its token graph's state inputs");
  // Each producing graph once, asked for every state input it makes.
  std::map<const ModelGraph*, std::vector<std::string>> asks;
  for (int v : tg->graph.held_inputs) {
    const std::string& name = tg->graph.values[v].name;
    if (const ModelGraph* p = m_.producer_of(name); p && p != tg) asks[p].push_back(name);
  }
  NamedTensors made;
  for (auto& [p, names] : asks) {
    auto have = output_names(p->graph);
    for (const auto& a : also)
      if (std::find(have.begin(), have.end(), a) != have.end() &&
          std::find(names.begin(), names.end(), a) == names.end())
        names.push_back(a);
    NamedTensors in;
    for (int v : p->graph.inputs)
      if (auto it = inputs.find(p->graph.values[v].name); it != inputs.end()) in.insert(*it);
    ARCH_TRY(auto outs, run(p->name(), std::move(in), names));
    for (auto& [n, t] : outs) made[n] = t;
  }
  NamedTensors state;
  for (int v : tg->graph.held_inputs)
    if (auto it = made.find(tg->graph.values[v].name); it != made.end()) state[it->first] = it->second;
  begin(std::move(state));
  return made;
}

void Session::begin(NamedTensors state) {
  reset();
  pending_state_ = std::move(state);
}

}  // namespace arch

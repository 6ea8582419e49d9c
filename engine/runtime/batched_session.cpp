#include "engine/runtime/batched_session.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "kernels/kernels.h"
#include "engine/runtime/graph_outputs.h"
#include "engine/runtime/kv_footprint.h"

namespace arch {

namespace {

// Whether program p's graph can run several sequences' rows in one call:
// every op keeping state keeps each sequence's apart (KV caches, recurrent
// states), and every attention reads its keys and values straight from a
// KV cache or from held values (the ops that mix positions know the
// sequences' regions; the rest are row by row).
Status check_batchable(const Program& p, const std::string& graph) {
  const Graph& g = *p.graph;
  std::vector<int> producer(g.values.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int v : g.nodes[n].outputs) producer[size_t(v)] = int(n);
  auto from_cache = [&](int v) { return v >= 0 && producer[size_t(v)] >= 0 && g.nodes[size_t(producer[size_t(v)])].op == "kv_cache"; };
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    const Node& node = g.nodes[n];
    const std::string at = "graph " + graph + ": " + g.values[size_t(node.outputs[0])].name + " (" + node.op + ")";
    if (p.steps[n].def && p.steps[n].def->stateful && !p.steps[n].def->sequences)
      return error(at + " keeps state that does not keep sequences apart: its sequences cannot be batched");
    auto held = [&](int v) { return v >= 0 && p.held[size_t(v)]; };
    if (node.op != "attention") continue;
    if (node.inputs.size() < 3 ||
        !((from_cache(node.inputs[1]) && from_cache(node.inputs[2])) || (held(node.inputs[1]) && held(node.inputs[2]))))
      return error(at + " attends over keys that are neither a KV cache's nor made from state inputs: its sequences cannot be batched");
    if (node.inputs.size() > 3 && node.inputs[3] >= 0)
      return error(at + " adds a bias to its scores (over every sequence's positions at once): its sequences cannot be batched");
  }
  return {};
}

}  // namespace

BatchedSession::BatchedSession(const Model& m, const ModelGraph& g, int slots, int64_t context)
    : m_(m), g_(g), context_(context), positions_(size_t(slots), 0), history_(size_t(slots)), held_(size_t(slots)) {
  state_.ops = &op_table();
  state_.max_context = int64_t(slots) * context;
  state_.sequences = &rows_;
  rows_.slot_capacity = context;
  over_held_.slot_capacity = context;
  over_held_.over_held = true;
  if (!g.graph.held_inputs.empty()) state_.held_sequences = &over_held_;
  tokens_input_ = g.graph.find_input("tokens");
  positions_input_ = g.graph.find_input("positions");
  if (auto keep = output_values(g.graph, {"logits"}); keep.ok()) logits_ = *keep;
  if (m_.mirror) {
    id_ = m_.mirror->next_id();
    tell({.kind = SessionCall::kOpenBatch, .n = slots, .m = context});
  }
}

BatchedSession::~BatchedSession() { tell({.kind = SessionCall::kClose}); }

std::unique_lock<std::recursive_mutex> BatchedSession::tell(SessionCall call) {
  if (!m_.mirror) return {};
  call.session = id_;
  return m_.mirror->tell(call);
}

void BatchedSession::release(int slot) {
  auto told = tell({.kind = SessionCall::kRelease, .n = slot});
  positions_.at(size_t(slot)) = 0;
  history_.at(size_t(slot)).clear();
  // Its rows stay in the side-by-side held rows, unread, until a slot is
  // next given some: a sequence ending does not make every other slot's
  // cross-attention keys again.
  held_.at(size_t(slot)).clear();
  // ... but no longer its: a next sequence there without any (a prompt
  // with no image) must not read them.
  if (size_t(slot) < over_held_.held.size()) over_held_.held[size_t(slot)].length = 0;
}

Status BatchedSession::hold(int slot, const NamedTensors& state) {
  if (slot < 0 || size_t(slot) >= positions_.size())
    return error("slot " + std::to_string(slot) + " is not one of the " + std::to_string(positions_.size()));
  const Graph& graph = g_.graph;
  if (graph.held_inputs.empty()) return error("graph " + g_.name() + " takes no state inputs");
  std::map<int, Tensor> mine;
  for (int v : graph.held_inputs) {
    const std::string& name = graph.values[size_t(v)].name;
    auto it = state.find(name);
    if (it == state.end()) return error("graph " + g_.name() + " takes state input '" + name + "', which was not given");
    if (it->second.shape.empty() || it->second.dim(0) < 1)
      return error("state input '" + name + "' is " + dims_str(it->second.shape) + ": it needs at least one row");
    mine[v] = it->second;
  }
  const int64_t rows = mine.begin()->second.dim(0);
  for (auto& [v, t] : mine)
    if (t.dim(0) != rows)
      return error("state inputs '" + graph.values[size_t(mine.begin()->first)].name + "' and '" + graph.values[size_t(v)].name +
                   "' have " + std::to_string(rows) + " and " + std::to_string(t.dim(0)) +
                   " rows: a slot's held rows are one region");
  held_[size_t(slot)] = std::move(mine);
  held_changed_ = true;
  positions_[size_t(slot)] = 0;
  history_[size_t(slot)].clear();
  return {};
}

Status BatchedSession::rewind(int slot, int64_t position) {
  if (slot < 0 || size_t(slot) >= positions_.size())
    return error("slot " + std::to_string(slot) + " is not one of the " + std::to_string(positions_.size()));
  if (position < 0 || position > positions_[size_t(slot)])
    return error("slot " + std::to_string(slot) + " is at position " + std::to_string(positions_[size_t(slot)]) +
                 ": it cannot go back to " + std::to_string(position));
  if (position == positions_[size_t(slot)]) return {};
  if (state_bytes_per_sequence(g_.program) > 0)
    return error("graph " + g_.name() + " keeps recurrent states, which cannot go back to an earlier position");
  if (m_.mirror) return error("a batched session split over processes does not go back");
  positions_[size_t(slot)] = position;
  auto& h = history_[size_t(slot)];
  if (int64_t(h.size()) > position) h.resize(size_t(position));
  return {};
}

Status BatchedSession::copy(int from, int to, int64_t positions) {
  for (int s : {from, to})
    if (s < 0 || size_t(s) >= positions_.size())
      return error("slot " + std::to_string(s) + " is not one of the " + std::to_string(positions_.size()));
  if (positions < 0 || positions > positions_[size_t(from)])
    return error("slot " + std::to_string(from) + " holds " + std::to_string(positions_[size_t(from)]) + " positions, not " +
                 std::to_string(positions));
  if (m_.mirror) return error("a batched session split over processes does not copy slots");
  if (from == to) return rewind(to, positions);
  if (state_bytes_per_sequence(g_.program) > 0)
    return error("graph " + g_.name() + " keeps recurrent states, which are not copied from one sequence to another");
  for (auto& st : state_.states)
    if (st && !st->copy_rows(int64_t(from) * context_, int64_t(to) * context_, positions))
      return error("graph " + g_.name() + " keeps a state whose rows cannot be copied from one sequence to another");
  positions_[size_t(to)] = positions;
  history_[size_t(to)].assign(history_[size_t(from)].begin(),
                              history_[size_t(from)].begin() + std::min<int64_t>(positions, int64_t(history_[size_t(from)].size())));
  auto& mine = held_[size_t(to)];
  const auto& theirs = held_[size_t(from)];
  bool same = mine.size() == theirs.size();
  for (auto a = mine.cbegin(), b = theirs.cbegin(); same && a != mine.cend(); ++a, ++b) same = a->second.data == b->second.data;
  if (!same) {
    mine = theirs;
    held_changed_ = true;
  }
  return {};
}

// Every slot's held rows one after another, in slot order; slots holding
// the same tensors share one region.
Status BatchedSession::gather_held() {
  std::vector<SequenceRows::Region> regions(held_.size());
  std::vector<int> first_of(held_.size(), -1);  // the earlier slot with the same tensors
  std::unordered_map<const void*, int> first_holding;
  int64_t total = 0;
  for (size_t s = 0; s < held_.size(); ++s) {
    if (held_[s].empty()) continue;
    const auto [at, fresh] = first_holding.emplace(held_[s].begin()->second.data, int(s));
    if (!fresh) {
      first_of[s] = at->second;
      regions[s] = regions[size_t(at->second)];
      continue;
    }
    regions[s] = {total, held_[s].begin()->second.dim(0)};
    total += regions[s].length;
  }
  std::map<int, Tensor> rows;
  for (int v : g_.graph.held_inputs) {
    const Tensor* any = nullptr;
    for (const auto& h : held_)
      if (!h.empty()) any = &h.at(v);
    if (!any) return error("no slot holds state input '" + g_.graph.values[size_t(v)].name + "'");
    Dims shape = any->shape;
    shape[0] = total;
    Tensor all = Tensor::zeros(any->dtype, shape);
    const size_t row_bytes = any->nbytes() / size_t(any->dim(0));
    for (size_t s = 0; s < held_.size(); ++s) {
      if (held_[s].empty() || first_of[s] >= 0) continue;
      const Tensor& t = held_[s].at(v);
      if (t.dtype != any->dtype || t.nbytes() / size_t(t.dim(0)) != row_bytes)
        return error("state input '" + g_.graph.values[size_t(v)].name + "': slot " + std::to_string(s) + "'s is " +
                     std::string(dtype_name(t.dtype)) + dims_str(t.shape) + ", another's " + std::string(dtype_name(any->dtype)) +
                     dims_str(any->shape));
      std::memcpy(static_cast<char*>(all.data) + size_t(regions[s].from) * row_bytes, t.data, t.nbytes());
    }
    rows[v] = std::move(all);
  }
  held_rows_ = std::move(rows);
  over_held_.held = std::move(regions);
  held_changed_ = false;
  return {};
}

int64_t BatchedSession::cache_bytes() const {
  return (kv_bytes_per_position(g_.program) * context_ + state_bytes_per_sequence(g_.program)) *
         int64_t(positions_.size());
}

Result<std::unique_ptr<BatchedSession>> BatchedSession::make(const Model& m, int slots, int64_t context,
                                                              bool logits_here) {
  const ModelGraph* g = m.token_graph();
  if (!g) return error(m.checkpoint.dir + ": the model has no graph with a 'tokens' input: it does not generate");
  if (m.mirror && !g->graph.held_inputs.empty())
    return error(m.checkpoint.dir + ": graph " + g->name() +
                 " takes state inputs (an encoder-decoder): its sequences are not batched across processes");
  if (!g->has_kv_cache) return error(m.checkpoint.dir + ": graph " + g->name() + " has no KV cache: it does not decode step by step");
  if (logits_here && !output_values(g->graph, {"logits"}).ok()) return error(m.checkpoint.dir + ": graph " + g->name() + " outputs no logits");
  if (slots < 1 || context < 1)
    return error("a batched session needs at least one slot and one position, got " + std::to_string(slots) + " x " +
                 std::to_string(context));
  ARCH_TRY_STATUS(check_batchable(g->program, g->name()));
  if (g->last_logits.graph) ARCH_TRY_STATUS(check_batchable(g->last_logits, g->name()));
  for (int v : g->graph.inputs) {
    const std::string& name = g->graph.values[size_t(v)].name;
    if (name != "tokens" && name != "positions" && !g->graph.default_of(v) && !g->graph.is_held(v))
      return error(m.checkpoint.dir + ": graph " + g->name() + " needs input '" + name +
                   "' beyond tokens and positions: its sequences cannot be batched");
  }
  return std::unique_ptr<BatchedSession>(new BatchedSession(m, *g, slots, context));
}

Result<Tensor> BatchedSession::run(std::span<const Piece> given) {
  if (given.empty()) return error("a batched call needs at least one sequence");
  // A piece taking its sequence past a length where every earlier
  // position's keys change (ModelGraph::history_changes_past: LongRoPE)
  // runs the whole sequence again from position 0, as Session::step does.
  std::vector<Piece> pieces(given.begin(), given.end());
  std::vector<std::vector<int32_t>> whole(pieces.size());
  std::vector<int64_t> start(pieces.size(), 0);  // where each piece runs from
  for (size_t k = 0; k < pieces.size(); ++k) {
    Piece& p = pieces[k];
    if (p.slot < 0 || size_t(p.slot) >= positions_.size()) continue;  // refused below
    const int64_t at = positions_[size_t(p.slot)], n = int64_t(p.tokens.size());
    start[k] = at;
    bool recompute = false;
    for (int64_t b : g_.history_changes_past) recompute = recompute || (at > 0 && at <= b && at + n > b);
    if (!recompute) continue;
    whole[k] = history_[size_t(p.slot)];
    whole[k].insert(whole[k].end(), p.tokens.begin(), p.tokens.end());
    start[k] = 0;
    p.tokens = whole[k];
  }
  rows_.pieces.clear();
  int64_t total = 0;
  bool one_each = true;
  std::vector<char> seen(positions_.size(), 0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const Piece& p = pieces[k];
    if (p.slot < 0 || size_t(p.slot) >= positions_.size())
      return error("slot " + std::to_string(p.slot) + " is not one of the " + std::to_string(positions_.size()));
    if (seen[size_t(p.slot)]++) return error("slot " + std::to_string(p.slot) + " appears twice in one call");
    if (p.tokens.empty()) return error("slot " + std::to_string(p.slot) + ": a piece needs at least one token");
    const int64_t at = start[k], n = int64_t(p.tokens.size());
    if (at + n > context_)
      return error("the context is full: " + std::to_string(at) + " + " + std::to_string(n) + " tokens exceed the " +
                   std::to_string(context_) + " positions a sequence has");
    rows_.pieces.push_back({p.slot, at, total, n});
    total += n;
    one_each = one_each && n == 1;
  }
  Tensor tokens = Tensor::zeros(DType::I32, {total});
  Tensor positions = Tensor::zeros(DType::I32, {total});
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto& r = rows_.pieces[k];
    std::memcpy(tokens.i32() + r.row, pieces[k].tokens.data(), size_t(r.rows) * 4);
    for (int64_t i = 0; i < r.rows; ++i) positions.i32()[r.row + i] = int32_t(r.position + i);
  }
  std::map<int, Tensor> feed{{tokens_input_, tokens}};
  if (positions_input_ >= 0) feed[positions_input_] = positions;
  const Graph& graph = g_.graph;
  if (!graph.held_inputs.empty()) {
    // State inputs the graph runs without (`= null`: a prompt with no
    // image) may be held by some slots and not others, or by none.
    bool optional = true, any = false;
    for (int v : graph.held_inputs) optional = optional && graph.may_be_absent(v);
    for (const auto& h : held_) any = any || !h.empty();
    for (const Piece& p : pieces)
      if (held_[size_t(p.slot)].empty() && !optional)
        return error("slot " + std::to_string(p.slot) + " holds no state inputs: graph " + g_.name() + " takes " +
                     graph.values[size_t(graph.held_inputs.front())].name);
    if (held_changed_ && any) ARCH_TRY_STATUS(gather_held());
    if (!any) held_rows_.clear(), over_held_.held.clear(), held_changed_ = false;
    over_held_.pieces = rows_.pieces;
    for (auto& [v, t] : held_rows_) feed[v] = t;
  }
  for (int v : graph.inputs) {
    if (feed.count(v) || graph.is_held(v)) continue;
    const Graph::InputDefault* d = graph.default_of(v);
    if (!d || d->absent) continue;
    Tensor t = Tensor::zeros(graph.values[size_t(v)].type.dtype, concretize(graph.values[size_t(v)].type.shape, 0));
    for (int64_t k = 0; k < t.numel(); ++k) {
      if (t.dtype == DType::F32) t.f32()[k] = float(d->number);
      else if (t.dtype == DType::I32) t.i32()[k] = int32_t(d->number);
    }
    feed[v] = t;
  }
  // One sequence's prompt: the logits of its last row only (what the
  // last-row program computes); otherwise every row's, the last of each
  // piece picked (a decode step's pieces are one row each).
  const bool last_only = pieces.size() == 1 && g_.last_logits.graph;
  const Program& program = last_only ? g_.last_logits : g_.program;
  SessionCall call{.kind = SessionCall::kRunBatch};
  if (m_.mirror)
    for (const Piece& p : given) call.pieces.push_back({p.slot, std::vector<int32_t>(p.tokens.begin(), p.tokens.end())});
  auto told = tell(std::move(call));
  ARCH_TRY(auto vals, run_program(program, state_, feed, DimValues(total, state_.max_context), logits_));
  for (const auto& r : rows_.pieces) positions_[size_t(r.slot)] = r.position + r.rows;
  if (!g_.history_changes_past.empty())
    for (size_t k = 0; k < pieces.size(); ++k) {
      auto& h = history_[size_t(pieces[k].slot)];
      if (!whole[k].empty()) h.clear();  // it ran whole
      h.insert(h.end(), pieces[k].tokens.begin(), pieces[k].tokens.end());
    }
  if (logits_.empty()) return Tensor{};  // made by another process
  ARCH_TRY(auto outs, collect_outputs(graph, vals, {"logits"}));
  Tensor& logits = outs.at("logits");
  const int64_t vocab = logits.dim(-1), rows = logits.numel() / vocab;
  if (last_only || (one_each && rows == total)) return logits.reshaped({rows, vocab});
  Tensor last = Tensor::zeros(DType::F32, {int64_t(pieces.size()), vocab});
  for (size_t k = 0; k < pieces.size(); ++k) {
    const auto& r = rows_.pieces[k];
    std::memcpy(last.f32() + int64_t(k) * vocab, logits.f32() + (r.row + r.rows - 1) * vocab, size_t(vocab) * 4);
  }
  return last;
}

}  // namespace arch

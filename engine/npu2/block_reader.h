// The lowering's reader (engine/npu2/lower.h): the step graph's values and who
// reads them, which nodes a unit has taken, the refusals so far, and the
// program being written with what each buffer slot holds. The blocks it
// reads are in their own files: attention_block.cpp, ffn_block.cpp, and
// the embedding and head in lower.cpp.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/npu2/lower.h"

namespace arch::npu2 {

struct BlockReader {
  const Graph& g;
  const LowerOptions& opt;
  std::vector<std::vector<int>> users;  // by value: the nodes reading it
  std::vector<char> claimed;            // by node: read into a unit
  std::vector<Refusal> refusals;
  Program p;
  std::map<std::string, int> holds;     // "buffer[b:e]" -> the value the last unit wrote there
  std::map<const Node*, int> cache_of;  // a kv_cache node lowered -> its cache (a later layer may read it)

  BlockReader(const Graph& graph, const LowerOptions& o) : g(graph), opt(o) {
    users.resize(g.values.size());
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (int v : g.nodes[n].inputs)
        if (v >= 0) users[v].push_back(int(n));
    claimed.assign(g.nodes.size(), 0);
  }

  // ---- what the graph says --------------------------------------------------
  const Node* producer(int v) const { return v >= 0 && g.values[v].producer >= 0 ? &g.nodes[g.values[v].producer] : nullptr; }
  int node_index(const Node* n) const { return int(n - g.nodes.data()); }
  const std::string& name(int v) const { return g.values[v].name; }
  std::string at(const Node& n) const {
    if (n.loc.file.empty()) return "?";
    return std::filesystem::path(n.loc.file).filename().string() + ":" + std::to_string(n.loc.line);
  }
  std::string op_str(const Node& n) const { return (n.outputs.empty() ? "?" : name(n.outputs[0])) + " = " + n.op; }
  // The nodes reading v that no unit has taken yet.
  std::vector<const Node*> open_users(int v) const {
    std::vector<const Node*> out;
    for (int n : users[v])
      if (!claimed[n]) out.push_back(&g.nodes[n]);
    return out;
  }
  const Node* sole_user(int v, const std::string& op) const {
    auto u = open_users(v);
    return u.size() == 1 && u[0]->op == op ? u[0] : nullptr;
  }
  const WeightRef* weight(int v) const { return v >= 0 ? g.weight_of(v) : nullptr; }
  // The other input of a binary node beside v.
  static int other_input(const Node& n, int v) { return n.inputs[0] == v ? n.inputs[1] : n.inputs[0]; }
  bool is_graph_output(int v, const std::string& as) const {
    for (const auto& o : g.outputs)
      if (o.value == v && o.name == as) return true;
    return false;
  }
  int64_t dim(int v, int i) const {
    const Shape& s = g.values[v].type.shape;
    const Dim& d = s[i < 0 ? s.size() + i : i];
    return d.concrete() ? d.n : -1;
  }

  // The nodes making v, walked back through ops that only move values
  // (reshape, slice, concat, transpose, rope): where each path meets one
  // that computes.
  std::vector<const Node*> makers(int v) const;
  // Whether keys `k` are made from a latent: a projection of a normed
  // projection (a compressed latent, its norm, its per-head
  // up-projection), not one projection of the block's input.
  bool latent_keys(int k) const;
  std::vector<std::string> latent_layers;  // "layers.N" whose attention is a latent one (refused once, whole)

  void claim(const Node* n) { claimed[node_index(n)] = 1; }
  void refuse(const std::string& block, const Node& n, std::string reason, std::string needed, bool once = false) {
    for (const auto& r : refusals)
      if ((r.at == at(n) || once) && r.reason == reason) return;  // the same line in a later layer: one row
    refusals.push_back(Refusal{block, op_str(n), at(n), std::move(reason), std::move(needed)});
  }
  void refuse_graph(std::string reason, std::string needed) {
    refusals.push_back(Refusal{"graph", "-", g.family + " " + g.name, std::move(reason), std::move(needed)});
  }

  // ---- what the program says ------------------------------------------------
  void need_buffer(const std::string& buf, const std::string& dtype, int64_t width);
  static std::string key(const Slot& s) {
    return s.end ? s.buffer + "[" + std::to_string(s.begin) + ":" + std::to_string(s.end) + "]" : s.buffer;
  }
  // The constant bound to `tensors` (weight values) stacked by rows: every
  // one a checkpoint tensor, all with one row width (check three).
  std::optional<Constant> bind(const std::string& block, const Node& n, const std::string& role,
                               const std::vector<int>& values);
  // Writes `u` after checking that each read slot holds the value the unit
  // reads (`reads_values`, aligned with u.reads; -1: not a value of the
  // graph, such as the carried token).
  void write(Unit u, const std::vector<int>& reads_values, const Node& first);

  // ---- the blocks -----------------------------------------------------------
  // The embedding: tokens -> the residual.
  int embedding(int tokens);

  // Where reading goes on after a block refused: the residual its add
  // leaves, or nowhere (-1).
  int after(const Node* add) const { return add ? add->outputs[0] : -1; }
  // A layer block's opening at residual r: its norm (bound, claimed, its
  // unit written), or null (refused). `add`: the block's residual add.
  const Node* open_block(int r, const std::string& block, const Node* add);
  // The norm reading residual r in `block`: the node, or null (refused).
  const Node* norm_of(int r, const std::string& block, const Node* residual_add);
  // The residual add reading r (the one add among r's readers), or null.
  const Node* residual_add(int r) const {
    for (const Node* u : open_users(r))
      if (u->op == "add" && (u->inputs[0] == r || u->inputs[1] == r)) return u;
    return nullptr;
  }
  Unit norm_unit(const std::string& block, const Node& n, const Constant& w, bool last_row);
  // A norm on a branch before its residual add (Gemma 2/3's post-attention
  // and post-FFN norms), in place on `buf`, which holds `in`: its output, or -1.
  int post_norm(const std::string& block, const Node& n, int in, const std::string& buf);
  // A projection of x: matmul(x, W^T) and a bias add after it, if any.
  struct Projection {
    const Node* matmul = nullptr;
    const Node* bias = nullptr;
    int weight = -1, bias_value = -1, out = -1;
  };
  std::optional<Projection> projection(const Node* m, const std::string& block);
  // One part of a merged matvec: the value it writes (the projection's
  // output, or a view of some of its columns: a merged matrix's part, each
  // head's half) and which of the projection's columns those are, in order.
  struct Part {
    Projection proj;
    int value = -1;
    std::vector<int64_t> columns;
  };
  // The whole projection as a part.
  Part whole(const Projection& pr) const;
  // `value` as a part of pr (made from its output by reshapes and slices
  // alone), or null (refused, naming `block`).
  std::optional<Part> part_of(const Projection& pr, int value, const std::string& block);
  // A matvec unit over the parts merged by rows (each part's rows of its
  // matrix, as views), writing each one's columns of `buffer` in turn.
  std::optional<Unit> matvec(const std::string& block, const std::string& role, const std::vector<Part>& parts,
                             const std::string& buffer);
  std::optional<Unit> matvec(const std::string& block, const std::string& role, const std::vector<Projection>& prs,
                             const std::string& buffer);

  // ---- where a projection's columns go ---------------------------------------
  // The values v reaches through reshapes and slices alone (views of its
  // columns) that an op computing something reads, or the graph gives out.
  std::vector<int> leaves_of(int v) const;
  // The reshapes and slices making v from `from`, v's own first; empty
  // where something else makes it (or v is `from`).
  std::vector<const Node*> moves_between(int v, int from) const;
  // Which of from's columns ([seq, N]) each of v's features holds, v made
  // from it by reshapes and slices that keep the seq axis; null otherwise.
  std::optional<std::vector<int64_t>> columns_of(int v, int from) const;
  // The first op `op` reached from v before `stop` (a block's residual
  // add), or null.
  const Node* reached(int v, const std::string& op, const Node* stop) const;
  // Columns `cols` of `buffer` as one slot where they are a run; null otherwise.
  static std::optional<Slot> run_of(const std::string& buffer, const std::vector<int64_t>& cols);
  // A reshape to [seq, heads, head_dim] after v (a view): the node, or null.
  const Node* head_split(int v) const {
    const Node* r = sole_user(v, "reshape");
    return r && g.values[r->outputs[0]].type.shape.size() == 3 ? r : nullptr;
  }

  // The mixer of layer `l` reading the residual r (a Gated-DeltaNet block
  // or an attention block): the residual after it, or -1 (refused).
  int mixer_block(int r, int l);
  // The attention block of layer `l` reading the residual r: the residual
  // after it, or -1 (refused).
  int attention_block(int r, int l);
  // The Gated-DeltaNet block of layer `l` (delta_block.cpp).
  int delta_block(int r, int l);

  int residual_unit(const std::string& block, const Node& add, int r, int branch, const std::string& from);

  // The FFN block of layer `l`: the residual after it, or -1.
  int ffn_block(int r, int l);
  // A gated FFN over x: gate and up views of `projections` (two, or one
  // merged matrix), act(gate) * up, a down projection. Read (or refused,
  // naming `at`), then written into `out` (its output value, or -1).
  struct GatedFfn {
    Part gate, up;
    const Node* act = nullptr;
    const Node* mul = nullptr;
    Projection down;
  };
  std::optional<GatedFfn> gated_ffn(const std::string& block, const std::vector<const Node*>& projections, const Node& at);
  int write_gated_ffn(const std::string& block, int x, const GatedFfn& f, const std::string& out);
  // Per-layer inputs made from the tokens and the embedding before the
  // first layer (Gemma 4's PLE): h, or -1 (refused). per_layer_block.cpp.
  int per_layer_inputs(int tokens, int h);
  // After a layer's FFN: its per-layer input block and its output scale,
  // where it has them: the residual after them, or -1.
  int layer_end(int r, int l);
  // An FFN of routed experts after its norm (experts_block.cpp).
  int experts_block(const std::string& block, int r, const Node* norm, const Node* add);
  // A dense FFN and routed experts side by side, each with its own norms,
  // summed (Gemma 4's MoE layers).
  int dense_and_experts_block(const std::string& block, int r, const Node* add);
  // The experts reading x (routed matmuls after their route), recognised:
  // what experts_block and dense_and_experts_block write.
  struct Experts {
    const Node *gate_mm = nullptr, *up_mm = nullptr, *down = nullptr;  // one node for both where one matrix holds gate and up
    const Node *gate_slice = nullptr, *up_slice = nullptr;              // its halves
    int gate = -1, up = -1;                                             // what the activation and its product read
    const Node *act = nullptr, *gmul = nullptr, *wmul = nullptr, *wsum = nullptr;
    int ids = -1, weights = -1;                                         // the route's outputs (weights: what the sum multiplies)
    std::vector<const Node*> route_ops;
    nlohmann::json route_attrs;
    int expert_scale = -1;                                              // a weight [experts] the chosen weights are scaled by
    Projection router;
    int64_t experts = 0, k = 0, inner = 0, width = 0;
  };
  std::optional<Experts> read_experts(const std::string& block, int x);
  // The route and expert units (the router's matvec already written into
  // router[0:experts]), up to the experts' outputs: false where refused.
  bool write_experts(const std::string& block, int x, const Experts& e);

  // The final norm, the head, the argmax and the advance.
  void head(int r);
};

}  // namespace arch::npu2

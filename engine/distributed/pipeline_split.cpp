#include "engine/distributed/pipeline_split.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "engine/distributed/tensor_split.h"

namespace arch {

namespace {

// "layers.3.self_attention.q" -> ("layers", 3); else ("", -1).
std::pair<std::string, int64_t> loop_index(const std::string& name) {
  static const std::regex pattern("^([A-Za-z_][A-Za-z_0-9]*)\\.([0-9]+)\\.");
  std::smatch m;
  if (!std::regex_search(name, m, pattern)) return {"", -1};
  return {m[1], std::stoll(m[2])};
}

}  // namespace

Result<Graph> split_pipeline(const Graph& g, const OpTable& ops, int rank, int ranks, PipelineSplitReport* report) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return error("pipeline split: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  if (ranks == 1) return g;
  const size_t n_nodes = g.nodes.size();
  // The layer loop: the loop name with the most layers.
  std::map<std::string, std::set<int64_t>> loops;
  for (const Node& n : g.nodes) {
    auto [loop, i] = loop_index(g.values[size_t(n.outputs[0])].name);
    if (i >= 0) loops[loop].insert(i);
  }
  std::string loop;
  for (const auto& [name, indices] : loops)
    if (loop.empty() || indices.size() > loops[loop].size()) loop = name;
  if (loop.empty()) return error("pipeline split: graph " + g.name + " has no layer loop to split into stages");
  const int64_t layers = *loops[loop].rbegin() + 1;
  std::vector<int64_t> first_of(size_t(ranks) + 1);
  for (int s = 0; s < ranks; ++s) first_of[size_t(s)] = even_range(layers, s, ranks).first;
  first_of[size_t(ranks)] = layers;
  auto stage_of_layer = [&](int64_t i) {
    int s = 0;
    while (s + 1 < ranks && i >= first_of[size_t(s) + 1]) ++s;
    return s;
  };

  // Values any process has without being sent them: inputs, weights, and
  // what depends on those alone (made again where read).
  std::vector<char> free_value(g.values.size(), 0), free_node(n_nodes, 0);
  for (int v : g.inputs) free_value[size_t(v)] = 1;
  for (const auto& w : g.weights) free_value[size_t(w.value)] = 1;
  for (size_t n = 0; n < n_nodes; ++n) {
    const Node& node = g.nodes[n];
    const OpDef* def = ops.find(node.op);
    bool all = !(def && def->stateful);
    for (int v : node.inputs) all = all && (v < 0 || free_value[size_t(v)]);
    free_node[n] = all;
    for (int v : node.outputs) free_value[size_t(v)] = all;
  }
  // Each other node's segment: 0..ranks-1 its stage's layers (0 also what
  // comes before the loop), `ranks` what follows it (on process 0).
  std::vector<int> seg(n_nodes, -1);
  int last_layer_node = -1, seen = -1;
  for (size_t n = 0; n < n_nodes; ++n)
    if (loop_index(g.values[size_t(g.nodes[n].outputs[0])].name).first == loop) last_layer_node = int(n);
  for (size_t n = 0; n < n_nodes; ++n) {
    if (free_node[n]) continue;
    auto [name, i] = loop_index(g.values[size_t(g.nodes[n].outputs[0])].name);
    if (name == loop) seen = seg[n] = stage_of_layer(i);
    else seg[n] = int(n) > last_layer_node ? ranks : seen < 0 ? 0 : seen;
  }
  auto holder = [&](int s) { return s == ranks ? 0 : s; };
  // How far each value made in a segment travels: to its last reader's
  // segment, round the ring (not back to process 0 for one it made).
  std::vector<int> made_in(g.values.size(), -1), reach(g.values.size(), -1);
  for (size_t n = 0; n < n_nodes; ++n)
    for (int v : g.nodes[n].outputs) made_in[size_t(v)] = seg[n];
  for (size_t n = 0; n < n_nodes; ++n)
    for (int v : g.nodes[n].inputs)
      if (v >= 0 && made_in[size_t(v)] >= 0 && holder(seg[n]) != holder(made_in[size_t(v)]))
        reach[size_t(v)] = std::max(reach[size_t(v)], seg[n]);
  // The values crossing from segment k to k + 1, by id.
  auto crossing = [&](int k) {
    std::vector<int> vs;
    for (size_t v = 0; v < g.values.size(); ++v)
      if (made_in[v] >= 0 && made_in[v] <= k && reach[v] > k) vs.push_back(int(v));
    return vs;
  };
  int like = -1;  // an input with the call's rows, for recv's shape
  for (int v : g.inputs)
    if (!g.values[size_t(v)].type.shape.empty() && g.values[size_t(v)].type.shape[0].sym == kSeqSym) like = v;
  if (like < 0) return error("pipeline split: graph " + g.name + " has no input with the call's rows (a seq dim)");

  Graph out = g;
  out.nodes.clear();
  out.weights.clear();
  PipelineSplitReport rep;
  rep.layers = layers;
  rep.first = first_of[size_t(rank)];
  rep.last = first_of[size_t(rank) + 1];
  auto receive = [&](int k, int from) -> Status {
    for (int v : crossing(k)) {
      const TypedShape& t = g.values[size_t(v)].type;
      std::vector<int64_t> dims;
      for (size_t d = 1; d < t.shape.size(); ++d) dims.push_back(t.shape[d].n);
      bool rows = t.dtype == DType::F32 && !t.shape.empty() && t.shape[0].sym == kSeqSym;
      for (size_t d = 1; d < t.shape.size(); ++d) rows = rows && t.shape[d].concrete();
      if (!rows)
        return error("pipeline split: " + g.values[size_t(v)].name + " " + type_str(t) + " crosses from stage " +
                     std::to_string(k) + " to the next, and only f32 rows [seq, ...] of fixed width are handed on");
      out.nodes.push_back(Node{"recv", {like}, {v}, Attrs{{"from", from}, {"dims", dims}}, g.values[size_t(v)].loc});
      ++rep.received;
    }
    return {};
  };
  auto send = [&](int k, int to) {
    for (int v : crossing(k)) {
      TypedShape t = g.values[size_t(v)].type;
      const int sent = out.add_value(Value{g.values[size_t(v)].name + ".sent", t, -1, g.values[size_t(v)].loc});
      out.nodes.push_back(Node{"send", {v}, {sent}, Attrs{{"to", to}}, g.values[size_t(v)].loc});
      ++rep.sent;
    }
  };
  // The free nodes each stage reads, made where read.
  // The marked nodes with the free nodes they read, through other free
  // nodes (rank 0's also those making its outputs of the inputs alone:
  // the embeddings).
  auto with_free_producers = [&](std::vector<char>& marks) {
    auto mark_producer = [&](int v) {
      if (v >= 0 && g.values[size_t(v)].producer >= 0 && free_node[size_t(g.values[size_t(v)].producer)])
        marks[size_t(g.values[size_t(v)].producer)] = 1;
    };
    if (rank == 0)
      for (const auto& o : g.outputs) mark_producer(o.value);
    for (size_t n = n_nodes; n-- > 0;)
      if (marks[n])
        for (int v : g.nodes[n].inputs) mark_producer(v);
  };
  std::vector<char> needed(n_nodes, 0);
  for (size_t n = 0; n < n_nodes; ++n) needed[n] = !free_node[n] && holder(seg[n]) == rank;
  with_free_producers(needed);
  // A free node goes with the first part that reads it; rank 0's part
  // after its recvs reads nothing made before them, so it can run apart
  // (ModelGraph::back).
  std::vector<char> before_post(n_nodes, 0);
  for (size_t n = 0; n < n_nodes; ++n) before_post[n] = needed[n] && !free_node[n] && seg[n] != ranks;
  with_free_producers(before_post);
  auto emit = [&](bool post) {
    for (size_t n = 0; n < n_nodes; ++n)
      if (needed[n] && (free_node[n] ? bool(before_post[n]) != post : (seg[n] == ranks) == post))
        out.nodes.push_back(g.nodes[n]);
  };
  if (rank == 0) {
    emit(false);
    send(0, 1);
    ARCH_TRY_STATUS(receive(ranks - 1, ranks - 1));
    emit(true);
  } else {
    ARCH_TRY_STATUS(receive(rank - 1, rank - 1));
    emit(false);
    send(rank, (rank + 1) % ranks);
  }
  // Its weights, and the outputs it makes (a stacked output whole or not
  // at all).
  std::set<int> read;
  for (const Node& n : out.nodes)
    for (int v : n.inputs)
      if (v >= 0) read.insert(v);
  for (const auto& w : g.weights)
    if (read.count(w.value)) out.weights.push_back(w);
  std::set<int> made;
  for (const Node& n : out.nodes)
    for (int v : n.outputs) made.insert(v);
  for (int v : g.inputs) made.insert(v);
  for (const auto& w : out.weights) made.insert(w.value);
  std::set<std::string> missing;
  for (const auto& o : g.outputs)
    if (!made.count(o.value)) missing.insert(o.name);
  out.outputs.clear();
  for (const auto& o : g.outputs)
    if (!missing.count(o.name)) out.outputs.push_back(o);
  for (auto& v : out.values) v.producer = -1;
  for (size_t n = 0; n < out.nodes.size(); ++n)
    for (int v : out.nodes[n].outputs) out.values[size_t(v)].producer = int(n);
  if (report) *report = rep;
  return out;
}

}  // namespace arch

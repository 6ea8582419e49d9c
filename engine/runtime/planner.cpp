#include "engine/runtime/planner.h"

#include "engine/runtime/load_progress.h"
#include "engine/core/quant.h"
#include "engine/core/weight_arena.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>

namespace arch {

namespace {

// Each value's producer from the nodes as they now stand.
void renumber_producers(Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (int o : g.nodes[i].outputs) g.values[size_t(o)].producer = int(i);
}

// How many nodes read each value, a graph output counting as one more.
std::vector<int> reader_counts(const Graph& g) {
  std::vector<int> readers(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (int in : n.inputs)
      if (in >= 0) ++readers[size_t(in)];
  for (const GraphOutput& o : g.outputs) ++readers[size_t(o.value)];
  return readers;
}

// The graph without the nodes marked, producers renumbered.
void drop_nodes(Graph& g, const std::vector<char>& dropped) {
  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!dropped[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
  renumber_producers(g);
}

// A matmul of a and b alone (its optional addend absent), one output.
bool plain_matmul(const Node& n) {
  return n.op == "matmul" && n.outputs.size() == 1 &&
         (n.inputs.size() == 2 || (n.inputs.size() == 3 && n.inputs[2] < 0));
}

// A matmul whose weight is bound, stored [N, K], and read by the backend as
// stored. Not where its rows are known to be many (an encoder over 1500
// audio frames): each product alone runs at the GEMM rate already, and the
// merged one's outputs would be sliced apart, a copy each.
bool mergeable(const Graph& g, const Node& n, const std::vector<Tensor>& weights, const OpTable& ops,
               const std::string& backend) {
  if (n.op != "matmul" || !plain_matmul(n) || n.inputs[0] < 0 || n.inputs[1] < 0) return false;
  if (!n.attrs.value("transpose_b", true)) return false;
  const Shape& a = g.values[size_t(n.inputs[0])].type.shape;
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < a.size(); ++d) rows = a[d].concrete() ? rows * a[d].n : -1;
  if (rows >= 256) return false;
  const Tensor& w = weights[size_t(n.inputs[1])];
  return w.data && w.shape.size() == 2 && g.values[size_t(n.outputs[0])].type.dtype == DType::F32 &&
         ops.takes_stored(n.op, backend, n.attrs, 1, w.dtype);
}

// The weights' rows one after another (a row is self-contained in every
// stored layout, quantized ones included).
Tensor concat_rows(const std::vector<const Tensor*>& parts) {
  int64_t rows = 0;
  for (const Tensor* t : parts) rows += t->dim(0);
  Tensor out = weight_zeros(parts[0]->dtype, {rows, parts[0]->dim(1)});
  auto* dst = static_cast<uint8_t*>(out.data);
  for (const Tensor* t : parts) {
    std::memcpy(dst, t->data, t->nbytes());
    dst += t->nbytes();
  }
  return out;
}

// add(y, z) where y is a matmul's output read by nothing else becomes the
// matmul's third input (matmul(a, b, z) = a @ b^T + z): a bias [N] bound as
// a weight, or a residual of the output's shape computed before the matmul
// runs. One op and one intermediate value fewer per fold.
int fold_adds(Graph& g, const std::vector<Tensor>& weights) {
  const std::vector<int> readers = reader_counts(g);
  std::vector<char> dropped(g.nodes.size(), 0);
  int folded = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& add = g.nodes[i];
    if (add.op != "add" || add.inputs.size() != 2 || add.outputs.size() != 1 || !add.attrs.empty()) continue;
    for (int side = 0; side < 2; ++side) {
      const int y = add.inputs[size_t(side)], z = add.inputs[size_t(1 - side)];
      if (y < 0 || z < 0 || y == z || readers[size_t(y)] != 1) continue;
      const int p = g.values[size_t(y)].producer;
      if (p < 0 || dropped[size_t(p)]) continue;
      Node& mm = g.nodes[size_t(p)];
      if (!plain_matmul(mm)) continue;
      const TypedShape& yt = g.values[size_t(y)].type;
      const TypedShape& zt = g.values[size_t(z)].type;
      const TypedShape& out = g.values[size_t(add.outputs[0])].type;
      if (yt.dtype != DType::F32 || zt.dtype != DType::F32 || out.shape != yt.shape) continue;
      const bool bias = weights[size_t(z)].data && zt.shape.size() == 1 && !yt.shape.empty() &&
                        zt.shape[0] == yt.shape.back();
      // A residual must exist before the matmul runs: a graph input or a
      // value made by an earlier node.
      const int zp = g.values[size_t(z)].producer;
      const bool residual = zt.shape == yt.shape && zp < int(p);
      if (!bias && !residual) continue;
      mm.inputs.resize(3);
      mm.inputs[2] = z;
      mm.outputs = add.outputs;
      g.values[size_t(y)].producer = -1;  // no longer made
      g.values[size_t(add.outputs[0])].producer = p;
      dropped[i] = 1;
      ++folded;
      break;
    }
  }
  drop_nodes(g, dropped);
  return folded;
}

// A merged projection's biases: matmul -> slice per member -> add(slice,
// bias [width]). The biases (f32, or bf16 / f16 widened exactly),
// concatenated as f32 (zeros where a slice has none), become the matmul's
// third input and the slices produce the adds' values.
int fold_slice_biases(Graph& g, std::vector<Tensor>& weights) {
  std::vector<std::vector<int>> readers(g.values.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (int in : g.nodes[n].inputs)
      if (in >= 0) readers[size_t(in)].push_back(int(n));
  std::vector<char> output(g.values.size(), 0), dropped(g.nodes.size(), 0);
  for (const GraphOutput& o : g.outputs) output[size_t(o.value)] = 1;
  int folded = 0;
  for (size_t p = 0; p < g.nodes.size(); ++p) {
    if (!plain_matmul(g.nodes[p]) || g.nodes[p].inputs.size() < 2) continue;
    const int y = g.nodes[p].outputs[0];
    const TypedShape yt = g.values[size_t(y)].type;
    if (output[size_t(y)] || yt.dtype != DType::F32 || yt.shape.empty() || !yt.shape.back().concrete()) continue;
    const int64_t N = yt.shape.back().n;
    // (slice node, add node, bias value) per reader; all readers slices.
    std::vector<std::tuple<int, int, int>> parts;
    std::vector<char> covered(size_t(N), 0);
    bool ok = !readers[size_t(y)].empty();
    for (int sn : readers[size_t(y)]) {
      const Node& sl = g.nodes[size_t(sn)];
      const int64_t start = sl.attrs.value("start", int64_t(-1)), end = sl.attrs.value("end", int64_t(-1));
      if (sl.op != "slice" || sl.attrs.value("axis", 0) != -1 || start < 0 || end > N || start >= end ||
          sl.outputs.size() != 1) {
        ok = false;
        break;
      }
      for (int64_t c = start; c < end; ++c) ok = ok && !covered[size_t(c)]++;
      const int so = sl.outputs[0];
      int add = -1, bias = -1;
      if (!output[size_t(so)] && readers[size_t(so)].size() == 1) {
        const Node& a = g.nodes[size_t(readers[size_t(so)][0])];
        const int other = a.op == "add" && a.inputs.size() == 2 && a.attrs.empty()
                              ? (a.inputs[0] == so ? a.inputs[1] : a.inputs[0])
                              : -1;
        const DType bt = other >= 0 ? weights[size_t(other)].dtype : DType::F32;
        if (other >= 0 && other != so && weights[size_t(other)].data &&
            (bt == DType::F32 || bt == DType::BF16 || bt == DType::F16) &&
            weights[size_t(other)].numel() == end - start && g.values[size_t(other)].type.shape.size() == 1 &&
            g.values[size_t(a.outputs[0])].type.shape == g.values[size_t(so)].type.shape) {
          add = readers[size_t(so)][0];
          bias = other;
        }
      }
      parts.emplace_back(sn, add, bias);
    }
    int with_bias = 0;
    for (auto& [sn, add, bias] : parts) with_bias += add >= 0;
    if (!ok || with_bias == 0) continue;
    Tensor merged = Tensor::zeros(DType::F32, {N});
    for (auto& [sn, add, bias] : parts) {
      if (add < 0) continue;
      const int64_t start = g.nodes[size_t(sn)].attrs.value("start", int64_t(0));
      const Tensor b32 = to_f32(weights[size_t(bias)]);  // a BF16 / F16 bias widens exactly
      std::memcpy(merged.f32() + start, b32.data, b32.nbytes());
      Node& sl = g.nodes[size_t(sn)];
      g.values[size_t(sl.outputs[0])].producer = -1;  // no longer made
      sl.outputs = g.nodes[size_t(add)].outputs;      // the slice now yields the biased value
      dropped[size_t(add)] = 1;
      ++folded;
    }
    const int b = g.add_value(Value{g.values[size_t(y)].name + ".bias", {DType::F32, {Dim::of(N)}}, -1,
                                    g.nodes[p].loc});
    weights.resize(g.values.size());
    weights[size_t(b)] = std::move(merged);
    g.nodes[p].inputs.resize(3);
    g.nodes[p].inputs[2] = b;
  }
  drop_nodes(g, dropped);
  return folded;
}

// Gated activations: mul(act(a), b), act a unary activation, becomes
// glu(gate, up) with attrs act, gate_start, up_start, width; a and b, when
// each is a slice of the last axis read by nothing else (a merged gate/up
// projection's halves), are read in place from what they slice. One pass
// over the rows instead of up to four, and no intermediate values.
int fuse_glu(Graph& g) {
  static const char* const kActs[] = {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh"};
  const std::vector<int> readers = reader_counts(g);
  std::vector<char> dropped(g.nodes.size(), 0);
  // The node making v, if nothing else reads v and it is not yet dropped.
  auto private_producer = [&](int v) -> int {
    const int p = v >= 0 ? g.values[size_t(v)].producer : -1;
    return p >= 0 && readers[size_t(v)] == 1 && !dropped[size_t(p)] ? p : -1;
  };
  // v as (source, first column): the slice's input when v is a private
  // slice of the last axis, else v itself from column 0.
  auto source_of = [&](int v, int& slice) -> std::pair<int, int64_t> {
    slice = private_producer(v);
    if (slice >= 0) {
      const Node& s = g.nodes[size_t(slice)];
      const int64_t start = s.attrs.value("start", int64_t(-1)), end = s.attrs.value("end", int64_t(-1));
      const Shape& x = s.inputs.empty() || s.inputs[0] < 0 ? Shape{} : g.values[size_t(s.inputs[0])].type.shape;
      if (s.op == "slice" && s.inputs.size() == 1 && s.outputs.size() == 1 && s.attrs.value("axis", 0) == -1 &&
          !x.empty() && x.back().concrete() && start >= 0 && end <= x.back().n && start < end)
        return {s.inputs[0], start};
    }
    slice = -1;
    return {v, 0};
  };
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    Node& mul = g.nodes[i];
    if (mul.op != "mul" || mul.inputs.size() != 2 || mul.outputs.size() != 1 || !mul.attrs.empty()) continue;
    const TypedShape& yt = g.values[size_t(mul.outputs[0])].type;
    if (yt.dtype != DType::F32 || yt.shape.empty() || !yt.shape.back().concrete()) continue;
    for (int side = 0; side < 2; ++side) {
      const int a = mul.inputs[size_t(side)], b = mul.inputs[size_t(1 - side)];
      const int act = private_producer(a);
      if (act < 0 || a == b) continue;
      const Node& an = g.nodes[size_t(act)];
      if (std::find(std::begin(kActs), std::end(kActs), an.op) == std::end(kActs) || an.inputs.size() != 1 ||
          an.inputs[0] < 0 || !an.attrs.empty())
        continue;
      // No broadcasting: gate, up and the product share a shape.
      const TypedShape &gt = g.values[size_t(an.inputs[0])].type, &ut = g.values[size_t(b)].type;
      if (gt.dtype != yt.dtype || gt.shape != yt.shape || ut.dtype != yt.dtype || ut.shape != yt.shape) continue;
      int gate_slice, up_slice;
      auto [gate, gate_start] = source_of(an.inputs[0], gate_slice);
      auto [up, up_start] = source_of(b, up_slice);
      Attrs attrs = {{"act", an.op}, {"gate_start", gate_start}, {"up_start", up_start}, {"width", yt.shape.back().n}};
      for (int dead : {act, gate_slice, up_slice})
        if (dead >= 0) {
          for (int o : g.nodes[size_t(dead)].outputs) g.values[size_t(o)].producer = -1;  // no longer made
          dropped[size_t(dead)] = 1;
        }
      mul = Node{"glu", {gate, up}, mul.outputs, attrs, mul.loc};
      ++fused;
      break;
    }
  }
  drop_nodes(g, dropped);
  return fused;
}

// act(y) where y is a matmul's output read by nothing else (a bias or
// residual folded in or not) becomes the matmul's `activation`: the
// activation applied row by row as the sum is written (BERT's and
// Whisper's fc1 + GELU), one pass and one value fewer.
int fuse_activations(Graph& g) {
  static const char* const kActs[] = {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh"};
  const std::vector<int> readers = reader_counts(g);
  std::vector<char> dropped(g.nodes.size(), 0);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& act = g.nodes[i];
    if (std::find(std::begin(kActs), std::end(kActs), act.op) == std::end(kActs) || act.inputs.size() != 1 ||
        act.outputs.size() != 1 || !act.attrs.empty())
      continue;
    const int y = act.inputs[0];
    if (y < 0 || readers[size_t(y)] != 1) continue;
    const int p = g.values[size_t(y)].producer;
    if (p < 0 || dropped[size_t(p)]) continue;
    Node& mm = g.nodes[size_t(p)];
    if (mm.op != "matmul" || mm.outputs.size() != 1 || mm.attrs.contains("activation")) continue;
    if (g.values[size_t(y)].type.dtype != DType::F32 ||
        g.values[size_t(act.outputs[0])].type.shape != g.values[size_t(y)].type.shape)
      continue;
    mm.attrs["activation"] = act.op;
    mm.outputs = act.outputs;
    g.values[size_t(y)].producer = -1;  // no longer made
    g.values[size_t(act.outputs[0])].producer = p;
    dropped[i] = 1;
    ++fused;
  }
  drop_nodes(g, dropped);
  return fused;
}

// leaky_relu(y) where y is a conv1d's output read by nothing else becomes
// the conv's `activation` (HiFi-GAN's resblocks: conv, leaky_relu, conv),
// applied as the output is written.
int fuse_conv_activations(Graph& g) {
  const std::vector<int> readers = reader_counts(g);
  std::vector<char> dropped(g.nodes.size(), 0);
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& act = g.nodes[i];
    if (act.op != "leaky_relu" || act.inputs.size() != 1 || act.outputs.size() != 1) continue;
    const int y = act.inputs[0];
    if (y < 0 || readers[size_t(y)] != 1) continue;
    const int p = g.values[size_t(y)].producer;
    if (p < 0 || dropped[size_t(p)]) continue;
    Node& conv = g.nodes[size_t(p)];
    if (conv.op != "conv1d" || conv.outputs.size() != 1 || conv.attrs.contains("activation") ||
        g.values[size_t(y)].type.dtype != DType::F32)
      continue;
    conv.attrs["activation"] = "leaky_relu";
    conv.attrs["activation_slope"] = act.attrs.value("slope", 0.01);
    conv.outputs = act.outputs;
    g.values[size_t(y)].producer = -1;
    g.values[size_t(act.outputs[0])].producer = p;
    dropped[i] = 1;
    ++fused;
  }
  drop_nodes(g, dropped);
  return fused;
}

}  // namespace

Plan plan_graph(const Graph& g, std::vector<Tensor> weights, const OpTable& ops, const std::string& backend) {
  Plan plan;
  weights.resize(g.values.size());
  // Groups of mergeable matmuls by (activation value, weight type, K), in node order.
  std::map<std::tuple<int, DType, int64_t>, std::vector<size_t>> groups;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    if (!mergeable(g, n, weights, ops, backend)) continue;
    const Tensor& w = weights[size_t(n.inputs[1])];
    groups[{n.inputs[0], w.dtype, w.dim(1)}].push_back(i);
  }
  std::map<size_t, std::vector<size_t>> first_of;  // first node of a group -> the group
  for (auto& [key, members] : groups)
    if (members.size() > 1) first_of[members.front()] = members;

  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  std::map<size_t, std::pair<int, int64_t>> slice_of;  // member node -> (merged value, column start)
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto group = first_of.find(i);
    if (group != first_of.end()) {
      std::vector<const Tensor*> parts;
      std::string names;
      for (size_t m : group->second) {
        parts.push_back(&weights[size_t(g.nodes[m].inputs[1])]);
        names += (names.empty() ? "" : "+") + g.values[size_t(g.nodes[m].outputs[0])].name;
      }
      // Straight into the layout the kernel wants (the cpu's tiles), when it
      // wants one: one copy of the merged weight, not two.
      const Node& head = g.nodes[i];
      const WeightLayout* layout = weight_layout(ops.weight_layout_for(head.op, backend, head.attrs, 1, *parts[0]));
      Tensor merged = layout ? layout->make(parts) : concat_rows(parts);
      for (const Tensor* part : parts) {
        weights_read(int64_t(part->nbytes()));
        release_pages(*part);  // read once; back from the file if touched again
      }
      const Node& first = g.nodes[i];
      Value wv{names + ".weight", {DType::F32, shape_of(merged.shape)}, -1, first.loc};
      int w_id = out->add_value(wv);
      TypedShape y = g.values[size_t(first.outputs[0])].type;
      y.shape.back() = Dim::of(merged.dim(0));
      int y_id = out->add_value(Value{names, y, int(out->nodes.size()), first.loc});
      weights.resize(out->values.size());
      weights[size_t(w_id)] = std::move(merged);
      out->nodes.push_back(Node{"matmul", {first.inputs[0], w_id}, {y_id}, first.attrs, first.loc});
      int64_t start = 0;
      for (size_t m : group->second) {
        slice_of[m] = {y_id, start};
        start += weights[size_t(g.nodes[m].inputs[1])].dim(0);
      }
      ++plan.stats.merged_groups;
      plan.stats.merged_nodes += int(group->second.size());
    }
    auto s = slice_of.find(i);
    if (s == slice_of.end()) {
      out->nodes.push_back(g.nodes[i]);
      continue;
    }
    const Node& member = g.nodes[i];
    const int64_t width = weights[size_t(member.inputs[1])].dim(0);
    Attrs attrs = {{"axis", -1}, {"start", s->second.second}, {"end", s->second.second + width}};
    out->values[size_t(member.outputs[0])].producer = int(out->nodes.size());
    out->nodes.push_back(Node{"slice", {s->second.first}, member.outputs, attrs, member.loc});
  }
  renumber_producers(*out);  // nodes moved
  weights.resize(out->values.size());
  plan.stats.folded_adds = fold_slice_biases(*out, weights);
  plan.stats.folded_adds += fold_adds(*out, weights);
  plan.stats.fused_glus = fuse_glu(*out);
  plan.stats.fused_activations = fuse_activations(*out);
  plan.stats.fused_activations += fuse_conv_activations(*out);
  plan.graph = std::move(out);
  plan.weights = std::move(weights);
  return plan;
}

namespace {

bool has_seq(const Shape& s) {
  for (const Dim& d : s)
    if (d.sym == 1) return true;
  return false;
}

// The input a row-local node carries the rows through, or -1 when the node
// mixes rows or reads a second row-dependent value.
int row_input(const Graph& g, const Node& n, const std::vector<Tensor>& weights) {
  static const char* const kUnary[] = {"silu", "gelu", "gelu_tanh", "quick_gelu", "relu", "sigmoid", "tanh",
                                       "exp",  "sqrt", "neg",       "rms_norm",   "layer_norm", "matmul",
                                       "add",  "sub",  "mul",       "div",        "cast",
                                       // a split graph's: every process cuts the same row
                                       "all_reduce", "all_gather"};
  if (std::find(std::begin(kUnary), std::end(kUnary), n.op) == std::end(kUnary) || n.outputs.size() != 1) return -1;
  if (n.op == "all_gather" && n.attrs.value("axis", 0) == 0) return -1;  // gathers rows
  int row = -1;
  for (int in : n.inputs) {
    if (in < 0 || weights[size_t(in)].data || !has_seq(g.values[size_t(in)].type.shape)) continue;
    if (row >= 0) return -1;  // two row-dependent operands
    row = in;
  }
  if (row < 0) return -1;
  const Shape& s = g.values[size_t(row)].type.shape;
  if (s.empty() || s[0].sym != 1) return -1;  // rows are the first dim
  if (n.op == "matmul" && n.inputs[0] != row) return -1;
  return row;
}

}  // namespace

std::shared_ptr<Graph> last_row_graph(const Graph& g, const std::vector<Tensor>& weights, const std::string& output,
                                      std::vector<int>& origin) {
  int out_value = -1;
  for (const GraphOutput& o : g.outputs)
    if (o.name == output && o.index < 0) out_value = o.value;
  if (out_value < 0) return nullptr;
  const std::vector<int> readers = reader_counts(g);
  // Walk back while the chain is private to this output.
  std::vector<int> chain;  // nodes, output first
  int v = out_value;
  while (true) {
    const int producer = g.values[size_t(v)].producer;
    if (producer < 0) break;
    const int row = row_input(g, g.nodes[size_t(producer)], weights);
    if (row < 0) break;
    chain.push_back(producer);
    v = row;
    if (readers[size_t(v)] != 1) break;  // shared beyond the chain: cut here
  }
  if (chain.empty()) return nullptr;
  const int cut = v;                            // the value sliced to its last row
  const size_t first = size_t(chain.back());    // the chain's first node reads `cut`
  auto out = std::make_shared<Graph>(g);
  out->nodes.clear();
  origin.clear();
  TypedShape last = g.values[size_t(cut)].type;
  last.shape[0] = Dim::of(1);
  const int sliced = out->add_value(Value{g.values[size_t(cut)].name + ".last", last, -1, g.values[size_t(cut)].loc});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (i == first) {
      Attrs attrs = {{"axis", 0}, {"start", -1}, {"end", INT64_MAX}};
      out->nodes.push_back(Node{"slice", {cut}, {sliced}, attrs, g.nodes[i].loc});
      origin.push_back(-1);
    }
    Node n = g.nodes[i];
    if (std::find(chain.begin(), chain.end(), int(i)) != chain.end()) {
      for (int& in : n.inputs)
        if (in == cut) in = sliced;
      for (int o : n.outputs) out->values[size_t(o)].type.shape[0] = Dim::of(1);
    }
    out->nodes.push_back(std::move(n));
    origin.push_back(int(i));
  }
  renumber_producers(*out);
  return out;
}

}  // namespace arch

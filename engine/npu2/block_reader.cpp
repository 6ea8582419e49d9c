// The reader's bookkeeping: buffers, bindings (check three), the slot
// check before a unit is written (check two), and the pieces every block
// reads: its norm, its residual add, a projection, a merged matvec.
#include "engine/npu2/block_reader.h"

#include <set>

#include <algorithm>

namespace arch::npu2 {

// ---- what the program says ------------------------------------------------
void BlockReader::need_buffer(const std::string& buf, const std::string& dtype, int64_t width) {
  for (auto& b : p.buffers)
    if (b.name == buf) {
      b.width = std::max(b.width, width);
      if (b.dtype != dtype) b.dtype = "f32";  // two writers disagree: the wider
      return;
    }
  p.buffers.push_back(Buffer{buf, dtype, width});
}

// The constant bound to `tensors` (weight values) stacked by rows: every
// one a checkpoint tensor, all with one row width (check three).
std::optional<Constant> BlockReader::bind(const std::string& block, const Node& n, const std::string& role,
                             const std::vector<int>& values) {
  Constant c;
  c.role = role;
  c.dtype = opt.profile.weights;
  int64_t rows = 0, width = -1;
  for (int v : values) {
    const WeightRef* w = weight(v);
    // A weight plus a number, computed once (Gemma's norm weights, 1 + w):
    // bound as the weight with that offset, the engine holding the sum.
    if (const auto wn = !w && values.size() == 1 ? g.weight_plus_number(v) : std::nullopt) {
      w = weight(wn->first);
      c.offset = wn->second;
      const Node* sum = producer(v);
      claim(sum);
      for (int in : sum->inputs)
        if (in != wn->first) claim(producer(in));
    }
    if (!w) {
      const Node* made = producer(v);
      refuse(block, n,
             "its " + role + " is computed" + (made ? " (" + made->op + " at " + at(*made) + ")" : "") +
                 ", not a checkpoint tensor",
             "a constant bound to a checkpoint tensor (the computation done before the engine reads it)");
      if (made) claim(made);
      c.parts.push_back(TensorView{name(v), 0, 1});
      continue;
    }
    const Shape& s = g.values[v].type.shape;
    for (const auto& d : s)
      if (!d.concrete()) {
        refuse(block, n, "its " + role + " '" + w->tensor + "' has a run-time dim", "a constant of fixed shape");
        return std::nullopt;
      }
    const int64_t r = s.empty() ? 1 : s[0].n;
    const int64_t wd = s.size() >= 2 ? s[1].n : 1;
    if (width >= 0 && wd != width) {
      refuse(block, n, "its " + role + "s differ in width (" + std::to_string(width) + ", " + std::to_string(wd) + ")",
             "parts of one row width to merge");
      return std::nullopt;
    }
    width = wd;
    c.parts.push_back(TensorView{w->tensor, 0, r});
    rows += r;
  }
  const Shape& first = g.values[values[0]].type.shape;
  if (values.size() == 1)
    for (const auto& d : first) c.shape.push_back(d.n);
  else
    c.shape = first.size() == 1 ? Dims{rows} : Dims{rows, width};
  return c;
}

// Writes `u` after checking that each read slot holds the value the unit
// reads (`reads_values`, aligned with u.reads; -1: not a value of the
// graph, such as the carried token).
void BlockReader::write(Unit u, const std::vector<int>& reads_values, const Node& first) {
  u.at = at(first);
  if (!refusals.empty()) {
    // Refused already: no program comes of it; the reading goes on only
    // to find what else the engine lacks.
    for (size_t i = 0; i < u.writes.size() && i < u.values.size(); ++i)
      if (const int v = g.find_value(u.values[i]); v >= 0) holds[key(u.writes[i])] = v;
    return;
  }
  for (size_t i = 0; i < u.reads.size() && i < reads_values.size(); ++i) {
    if (reads_values[i] < 0) continue;
    auto it = holds.find(key(u.reads[i]));
    if (it == holds.end() || it->second != reads_values[i]) {
      refuse(u.block, first,
             "its " + u.kind + " unit reads '" + name(reads_values[i]) + "' from " + key(u.reads[i]) + ", which holds " +
                 (it == holds.end() ? std::string("nothing") : "'" + name(it->second) + "'"),
             "the value the block before wrote");
      return;
    }
  }
  for (size_t i = 0; i < u.writes.size() && i < u.values.size(); ++i) {
    const int v = g.find_value(u.values[i]);
    if (v >= 0) holds[key(u.writes[i])] = v;
  }
  p.units.push_back(std::move(u));
}

// The norm reading residual r in `block`: the node, or null (refused).
const Node* BlockReader::norm_of(int r, const std::string& block, const Node* residual_add) {
  const Node* norm = nullptr;
  for (const Node* u : open_users(r)) {
    if (u == residual_add) continue;
    if (u->op == "rms_norm" && !norm) norm = u;
    else if (u->op == "layer_norm") {
      refuse(block, *u, "a LayerNorm (mean and bias), not an RMSNorm", "a LayerNorm unit");
      return nullptr;
    } else {
      refuse(block, *u, "the residual is read by " + u->op + " beside the block's norm and add",
             "a unit reading the residual stream");
      return nullptr;
    }
  }
  if (!norm) {
    if (!refusals.empty()) return nullptr;
    refuse_graph("the residual '" + name(r) + "' reaches no RMSNorm", "a norm before each block");
    return nullptr;
  }
  if (norm->inputs.size() < 2 || norm->inputs[1] < 0) {
    refuse(block, *norm, "an RMSNorm without a weight", "a norm weight");
    return nullptr;
  }
  return norm;
}

const Node* BlockReader::open_block(int r, const std::string& block, const Node* add) {
  const Node* norm = norm_of(r, block, add);
  if (!norm) return nullptr;
  auto w = bind(block, *norm, "weight", {norm->inputs[1]});
  if (!w) return nullptr;
  claim(norm);
  write(norm_unit(block, *norm, *w, false), {r}, *norm);
  return norm;
}

Unit BlockReader::norm_unit(const std::string& block, const Node& n, const Constant& w, bool last_row) {
  need_buffer("normed", opt.profile.activations, dim(n.outputs[0], -1));
  Unit u = unit("rms_norm", block);
  u.reads = {Slot{"residual"}};
  u.writes = {Slot{"normed"}};
  u.constants = {w};
  u.attrs = {{"eps", n.attrs.value("eps", 1e-6)}};
  u.values = {name(n.outputs[0])};
  u.ops = {op_str(n)};
  u.last_row = last_row;
  return u;
}

int BlockReader::post_norm(const std::string& block, const Node& n, int in, const std::string& buf) {
  auto w = bind(block, n, "weight", {n.inputs[1]});
  if (!w) return -1;
  claim(&n);
  Unit u = norm_unit(block, n, *w, false);
  u.reads = {Slot{buf}};
  u.writes = {Slot{buf}};
  write(u, {in}, n);
  return n.outputs[0];
}

std::optional<BlockReader::Projection> BlockReader::projection(const Node* m, const std::string& block) {
  if (!m || m->op != "matmul") return std::nullopt;
  if (!m->attrs.value("transpose_b", true) || (m->inputs.size() > 2 && m->inputs[2] >= 0) || !weight(m->inputs[1])) {
    refuse(block, *m, "a matmul that is not x @ W^T with a checkpoint W", "a matvec unit's form");
    return std::nullopt;
  }
  Projection pr{m, nullptr, m->inputs[1], -1, m->outputs[0]};
  auto u = open_users(pr.out);
  if (u.size() == 1 && u[0]->op == "add") {
    const int other = u[0]->inputs[0] == pr.out ? u[0]->inputs[1] : u[0]->inputs[0];
    if (weight(other) && g.values[other].type.shape.size() == 1) {
      pr.bias = u[0];
      pr.bias_value = other;
      pr.out = u[0]->outputs[0];
    }
  }
  return pr;
}

// A matvec unit over the projections `prs` merged by rows, writing each
// one's columns of `buffer` in turn.
std::optional<Unit> BlockReader::matvec(const std::string& block, const std::string& role, const std::vector<Projection>& prs,
                           const std::string& buffer) {
  std::vector<int> ws, bs;
  for (const auto& pr : prs) {
    ws.push_back(pr.weight);
    if (pr.bias) bs.push_back(pr.bias_value);
  }
  if (!bs.empty() && bs.size() != prs.size()) {
    refuse(block, *prs[0].matmul, "some of the merged projections have a bias and some not",
           "a bias on every part or on none");
    return std::nullopt;
  }
  auto w = bind(block, *prs[0].matmul, "weight", ws);
  if (!w) return std::nullopt;
  Unit u = unit("matvec", block);
  u.reads = {Slot{"normed"}};
  u.constants = {*w};
  if (!bs.empty()) {
    auto b = bind(block, *prs[0].bias, "bias", bs);
    if (!b) return std::nullopt;
    u.constants.push_back(*b);
  }
  int64_t col = 0;
  for (const auto& pr : prs) {
    const int64_t n = dim(pr.out, -1);
    u.writes.push_back(Slot{buffer, col, col + n});
    u.values.push_back(name(pr.out));
    u.ops.push_back(op_str(*pr.matmul));
    if (pr.bias) u.ops.push_back(op_str(*pr.bias));
    claim(pr.matmul);
    if (pr.bias) claim(pr.bias);
    col += n;
  }
  if (prs.size() == 1) u.writes[0] = Slot{buffer};
  u.attrs = {{"role", role}};
  need_buffer(buffer, opt.profile.output_of(role, false), col);
  return u;
}

int BlockReader::residual_unit(const std::string& block, const Node& add, int r, int branch, const std::string& from) {
  claim(&add);
  Unit u = unit("add", block);
  u.reads = {Slot{"residual"}, Slot{from}};
  u.writes = {Slot{"residual"}};
  u.values = {name(add.outputs[0])};
  u.ops = {op_str(add)};
  write(u, {r, branch}, add);
  return add.outputs[0];
}

std::vector<const Node*> BlockReader::makers(int v) const {
  static const std::set<std::string> moves = {"reshape", "slice", "concat", "transpose", "rope"};
  std::vector<const Node*> out;
  std::vector<int> todo{v};
  std::set<int> seen;
  while (!todo.empty()) {
    const int at = todo.back();
    todo.pop_back();
    const Node* n = producer(at);
    if (!n || !seen.insert(node_index(n)).second) continue;
    if (!moves.count(n->op)) {
      out.push_back(n);
      continue;
    }
    for (int in : n->inputs)
      if (in >= 0 && !weight(in)) todo.push_back(in);
  }
  return out;
}

bool BlockReader::latent_keys(int k) const {
  auto projection = [&](const Node* n) { return n->op == "matmul" && n->inputs.size() > 1 && weight(n->inputs[1]); };
  for (const Node* up : makers(k))
    if (projection(up))
      for (const Node* norm : makers(up->inputs[0]))
        if (norm->op == "rms_norm" || norm->op == "layer_norm")
          for (const Node* down : makers(norm->inputs[0]))
            if (projection(down)) return true;
  return false;
}

bool BlockReader::routed_by_topk(const Node& n) const {
  // Back from the rows' matrix numbers, short of anything made from the
  // residual stream (a projection, a norm), which would reach other layers.
  static const std::set<std::string> stop = {"matmul", "rms_norm", "layer_norm", "embed", "routed_matmul"};
  std::vector<int> todo{n.inputs.size() > 2 ? n.inputs[2] : -1};
  std::set<int> seen;
  while (!todo.empty()) {
    const Node* p = producer(todo.back());
    todo.pop_back();
    if (!p || !seen.insert(node_index(p)).second) continue;
    if (p->op == "topk") return true;
    if (stop.count(p->op)) continue;
    for (int in : p->inputs)
      if (in >= 0) todo.push_back(in);
  }
  return false;
}

}  // namespace arch::npu2

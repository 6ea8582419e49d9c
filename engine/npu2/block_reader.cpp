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

BlockReader::Part BlockReader::whole(const Projection& pr) const {
  Part part{pr, pr.out, {}};
  part.columns.resize(size_t(std::max<int64_t>(0, dim(pr.out, -1))));
  for (size_t i = 0; i < part.columns.size(); ++i) part.columns[i] = int64_t(i);
  return part;
}

std::optional<BlockReader::Part> BlockReader::part_of(const Projection& pr, int value, const std::string& block) {
  auto cols = columns_of(value, pr.out);
  if (!cols) {
    refuse(block, *pr.matmul, "'" + name(value) + "' is not a view of the projection's columns (reshapes and slices of it)",
           "a projection's rows bound as views");
    return std::nullopt;
  }
  return Part{pr, value, std::move(*cols)};
}

namespace {

// Rows `rows` of `tensor`, in order, as runs of consecutive rows.
void add_views(Constant& c, const std::string& tensor, const std::vector<int64_t>& rows) {
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    c.parts.push_back(TensorView{tensor, rows[i], rows[j - 1] + 1});
    i = j;
  }
}

}  // namespace

// A matvec unit over the parts merged by rows (each part's rows of its
// matrix, as views), writing each one's columns of `buffer` in turn.
std::optional<Unit> BlockReader::matvec(const std::string& block, const std::string& role, const std::vector<Part>& parts,
                                        const std::string& buffer) {
  size_t biased = 0;
  for (const auto& pt : parts) biased += pt.proj.bias ? 1 : 0;
  if (biased != 0 && biased != parts.size()) {
    refuse(block, *parts[0].proj.matmul, "some of the merged projections have a bias and some not",
           "a bias on every part or on none");
    return std::nullopt;
  }
  Constant w, b;
  w.role = "weight";
  b.role = "bias";
  w.dtype = b.dtype = opt.profile.weights;
  int64_t rows = 0, width = -1;
  for (const auto& pt : parts) {
    const int64_t wd = dim(pt.proj.weight, 1), n = dim(pt.proj.weight, 0);
    if (wd < 0 || n < 0) {
      refuse(block, *pt.proj.matmul, "its weight '" + weight(pt.proj.weight)->tensor + "' has a run-time dim", "a constant of fixed shape");
      return std::nullopt;
    }
    if (width >= 0 && wd != width) {
      refuse(block, *pt.proj.matmul, "its weights differ in width (" + std::to_string(width) + ", " + std::to_string(wd) + ")",
             "parts of one row width to merge");
      return std::nullopt;
    }
    for (int64_t c : pt.columns)
      if (c < 0 || c >= n) {
        refuse(block, *pt.proj.matmul, "a view past its weight's rows", "rows of the weight");
        return std::nullopt;
      }
    width = wd;
    add_views(w, weight(pt.proj.weight)->tensor, pt.columns);
    if (pt.proj.bias) add_views(b, weight(pt.proj.bias_value)->tensor, pt.columns);
    rows += int64_t(pt.columns.size());
  }
  w.shape = {rows, width};
  b.shape = {rows};
  Unit u = unit("matvec", block);
  u.reads = {Slot{"normed"}};
  u.constants = {w};
  if (biased) u.constants.push_back(b);
  int64_t col = 0;
  for (const auto& pt : parts) {
    const int64_t n = int64_t(pt.columns.size());
    u.writes.push_back(Slot{buffer, col, col + n});
    u.values.push_back(name(pt.value));
    if (!claimed[node_index(pt.proj.matmul)]) {
      u.ops.push_back(op_str(*pt.proj.matmul));
      if (pt.proj.bias) u.ops.push_back(op_str(*pt.proj.bias));
    }
    claim(pt.proj.matmul);
    if (pt.proj.bias) claim(pt.proj.bias);
    auto moves = moves_between(pt.value, pt.proj.out);
    for (auto it = moves.rbegin(); it != moves.rend(); ++it)
      if (!claimed[node_index(*it)]) {
        u.ops.push_back(op_str(**it));
        claim(*it);
      }
    col += n;
  }
  if (parts.size() == 1) u.writes[0] = Slot{buffer};
  u.attrs = {{"role", role}};
  need_buffer(buffer, opt.profile.output_of(role, false), col);
  return u;
}

std::optional<Unit> BlockReader::matvec(const std::string& block, const std::string& role, const std::vector<Projection>& prs,
                                        const std::string& buffer) {
  std::vector<Part> parts;
  for (const auto& pr : prs) parts.push_back(whole(pr));
  return matvec(block, role, parts, buffer);
}

// ---- where a projection's columns go ------------------------------------------
namespace {
bool is_move(const Node& n) { return n.op == "reshape" || n.op == "slice"; }
}  // namespace

std::vector<int> BlockReader::leaves_of(int v) const {
  std::vector<int> out;
  bool computed = false;
  std::vector<const Node*> moves;
  for (const Node* u : open_users(v))
    if (is_move(*u) && u->inputs[0] == v) moves.push_back(u);
    else computed = true;
  for (const auto& o : g.outputs)
    if (o.value == v) computed = true;
  if (computed || moves.empty()) out.push_back(v);
  for (const Node* m : moves)
    for (int leaf : leaves_of(m->outputs[0])) out.push_back(leaf);
  return out;
}

std::vector<const Node*> BlockReader::moves_between(int v, int from) const {
  std::vector<const Node*> chain;
  for (int at = v; at != from;) {
    const Node* n = producer(at);
    if (!n || !is_move(*n) || n->inputs.empty() || n->inputs[0] < 0) return {};
    chain.push_back(n);
    at = n->inputs[0];
  }
  return chain;
}

std::optional<std::vector<int64_t>> BlockReader::columns_of(int v, int from) const {
  const auto chain = moves_between(v, from);
  if (chain.empty() && v != from) return std::nullopt;
  // The features of a row of `at`: their dims past the seq axis, and which
  // of from's columns each is.
  auto row_dims = [&](int at) -> std::optional<Dims> {
    const Shape& s = g.values[at].type.shape;
    if (s.empty()) return std::nullopt;
    Dims d;
    for (size_t i = 1; i < s.size(); ++i) {
      if (!s[i].concrete()) return std::nullopt;
      d.push_back(s[i].n);
    }
    return d;
  };
  auto count = [](const Dims& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return n;
  };
  auto dims = row_dims(from);
  if (!dims) return std::nullopt;
  std::vector<int64_t> cols(size_t(count(*dims)));
  for (size_t i = 0; i < cols.size(); ++i) cols[i] = int64_t(i);
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Node& n = **it;
    auto out = row_dims(n.outputs[0]);
    if (!out) return std::nullopt;
    if (n.op == "reshape") {
      // The seq axis kept: the same features per row, shaped anew.
      if (count(*out) != int64_t(cols.size())) return std::nullopt;
    } else {
      int64_t axis = n.attrs.value("axis", int64_t(0));
      const int64_t rank = int64_t(dims->size()) + 1;
      if (axis < 0) axis += rank;
      const int64_t start = n.attrs.value("start", int64_t(0)), end = n.attrs.value("end", int64_t(0));
      if (axis < 1 || axis >= rank || n.attrs.value("step", int64_t(1)) != 1) return std::nullopt;
      const int64_t len = (*dims)[size_t(axis - 1)];
      if (start < 0 || end > len || start >= end) return std::nullopt;
      int64_t inner = 1, outer = 1;
      for (int64_t i = axis; i < int64_t(dims->size()); ++i) inner *= (*dims)[size_t(i)];
      for (int64_t i = 0; i + 1 < axis; ++i) outer *= (*dims)[size_t(i)];
      std::vector<int64_t> kept;
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = start; i < end; ++i)
          for (int64_t j = 0; j < inner; ++j) kept.push_back(cols[size_t((o * len + i) * inner + j)]);
      if (int64_t(kept.size()) != count(*out)) return std::nullopt;
      cols = std::move(kept);
    }
    dims = out;
  }
  return cols;
}

const Node* BlockReader::reached(int v, const std::string& op, const Node* stop) const {
  std::vector<int> todo{v};
  std::set<int> seen;
  while (!todo.empty()) {
    const int at = todo.back();
    todo.pop_back();
    for (int n : users[at]) {
      const Node& u = g.nodes[n];
      if (&u == stop || !seen.insert(n).second) continue;
      if (u.op == op) return &u;
      for (int o : u.outputs) todo.push_back(o);
    }
  }
  return nullptr;
}

std::optional<Slot> BlockReader::run_of(const std::string& buffer, const std::vector<int64_t>& cols) {
  if (cols.empty()) return std::nullopt;
  for (size_t i = 1; i < cols.size(); ++i)
    if (cols[i] != cols[i - 1] + 1) return std::nullopt;
  return Slot{buffer, cols.front(), cols.back() + 1};
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


}  // namespace arch::npu2

// Lowering a decoder's step graph into NPU2 units, block by block: the
// embedding; per layer the attention block (norm; Q/K/V as one matvec over
// row ranges of one merged matrix; the per-head q/k norms where there are
// some; RoPE; the KV write; attention; the output projection; the residual
// add) and the FFN block (norm; gate and up as one matvec; the gated
// activation as one unit; down; the add); then the final norm, the head,
// the argmax and the step's advance. The reader follows the graph's values
// from the residual, so the template's op order does not matter; every node
// must end up in some unit.
#include "npu2/lower.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace arch::npu2 {

namespace {

struct Reader {
  const Graph& g;
  const LowerOptions& opt;
  std::vector<std::vector<int>> users;  // by value: the nodes reading it
  std::vector<char> claimed;            // by node: read into a unit
  std::vector<Refusal> refusals;
  Program p;
  std::map<std::string, int> holds;     // "buffer[b:e]" -> the value the last unit wrote there

  Reader(const Graph& graph, const LowerOptions& o) : g(graph), opt(o) {
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
  void need_buffer(const std::string& buf, const std::string& dtype, int64_t width) {
    for (auto& b : p.buffers)
      if (b.name == buf) {
        b.width = std::max(b.width, width);
        if (b.dtype != dtype) b.dtype = "f32";  // two writers disagree: the wider
        return;
      }
    p.buffers.push_back(Buffer{buf, dtype, width});
  }
  static std::string key(const Slot& s) {
    return s.end ? s.buffer + "[" + std::to_string(s.begin) + ":" + std::to_string(s.end) + "]" : s.buffer;
  }
  // The constant bound to `tensors` (weight values) stacked by rows: every
  // one a checkpoint tensor, all with one row width (check three).
  std::optional<Constant> bind(const std::string& block, const Node& n, const std::string& role,
                               const std::vector<int>& values) {
    Constant c;
    c.role = role;
    c.dtype = opt.profile.weights;
    int64_t rows = 0, width = -1;
    for (int v : values) {
      const WeightRef* w = weight(v);
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
  void write(Unit u, const std::vector<int>& reads_values, const Node& first) {
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

  // ---- the blocks -----------------------------------------------------------
  // The embedding: tokens -> the residual.
  int embedding(int tokens) {
    const Node* e = sole_user(tokens, "embed");
    if (!e || e->inputs[1] != tokens) {
      auto u = open_users(tokens);
      if (!u.empty()) refuse("embedding", *u[0], "the tokens are read by " + u[0]->op + ", not one embed", "an embedding table lookup");
      else refuse_graph("nothing reads the tokens", "an embedding of the tokens");
      return -1;
    }
    claim(e);
    int h = e->outputs[0];
    const int64_t D = dim(h, -1);
    auto table = bind("embedding", *e, "table", {e->inputs[0]});
    if (!table) return -1;
    need_buffer("ids", "i32", 1);
    need_buffer("residual", opt.profile.residual, D);
    Unit u{.kind = "embedding", .block = "embedding"};
    u.reads = {Slot{"ids"}};
    u.writes = {Slot{"residual"}};
    u.constants = {*table};
    u.values = {name(h)};
    u.ops = {op_str(*e)};
    holds["ids"] = tokens;
    write(u, {tokens}, *e);
    // A scale on the embedding (Gemma's x sqrt(hidden)): refused, and the
    // reading goes on from the scaled value.
    auto next = open_users(h);
    if (next.size() == 1 && (next[0]->op == "mul" || next[0]->op == "div")) {
      refuse("embedding", *next[0], "the embedding is scaled (" + next[0]->op + " by a constant)",
             "a scale in the embedding unit");
      claim(next[0]);
      h = next[0]->outputs[0];
      holds["residual"] = h;
    }
    return h;
  }

  // The norm reading residual r in `block`: the node, or null (refused).
  const Node* norm_of(int r, const std::string& block, const Node* residual_add) {
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
  // The residual add reading r (the one add among r's readers), or null.
  const Node* residual_add(int r) const {
    for (const Node* u : open_users(r))
      if (u->op == "add" && (u->inputs[0] == r || u->inputs[1] == r)) return u;
    return nullptr;
  }
  Unit norm_unit(const std::string& block, const Node& n, const Constant& w, bool last_row) {
    need_buffer("normed", opt.profile.activations, dim(n.outputs[0], -1));
    Unit u{.kind = "rms_norm", .block = block};
    u.reads = {Slot{"residual"}};
    u.writes = {Slot{"normed"}};
    u.constants = {w};
    u.attrs = {{"eps", n.attrs.value("eps", 1e-6)}};
    u.values = {name(n.outputs[0])};
    u.ops = {op_str(n)};
    u.last_row = last_row;
    return u;
  }
  // A projection of x: matmul(x, W^T) and a bias add after it, if any.
  struct Projection {
    const Node* matmul = nullptr;
    const Node* bias = nullptr;
    int weight = -1, bias_value = -1, out = -1;
  };
  std::optional<Projection> projection(const Node* m, const std::string& block) {
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
  std::optional<Unit> matvec(const std::string& block, const std::string& role, const std::vector<Projection>& prs,
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
    Unit u{.kind = "matvec", .block = block};
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
  // A reshape to [seq, heads, head_dim] after v (a view): the node, or null.
  const Node* head_split(int v) const {
    const Node* r = sole_user(v, "reshape");
    return r && g.values[r->outputs[0]].type.shape.size() == 3 ? r : nullptr;
  }

  // The attention block of layer `l` reading the residual r: the residual
  // after it, or -1 (refused).
  int attention_block(int r, int l) {
    const std::string block = "layers." + std::to_string(l) + ".attention";
    const Node* add = residual_add(r);
    const Node* norm = norm_of(r, block, add);
    if (!norm) return add ? add->outputs[0] : -1;
    auto w = bind(block, *norm, "weight", {norm->inputs[1]});
    if (!w) return -1;
    const int x = norm->outputs[0];
    auto x_users = open_users(x);
    claim(norm);
    write(norm_unit(block, *norm, *w, false), {r}, *norm);
    // Q, K and V: three projections of x, told apart by where they go.
    if (x_users.size() != 3) {
      refuse(block, x_users.empty() ? *norm : *x_users[0],
             "the norm's output is read by " + std::to_string(x_users.size()) + " ops, not three projections (q, k, v)",
             "a mixer of separate q, k and v projections");
      return add ? add->outputs[0] : -1;
    }
    struct Path {
      Projection proj;
      const Node* split = nullptr;
      const Node* qk_norm = nullptr;
      const Node* rope = nullptr;
      int end = -1;  // what reaches the cache or the attention
    };
    std::vector<Path> paths;
    for (const Node* u : x_users) {
      auto pr = projection(u, block);
      if (!pr) {
        if (u->op != "matmul") refuse(block, *u, "the norm's output is read by " + u->op, "q, k and v projections");
        return add ? add->outputs[0] : -1;
      }
      Path path{*pr};
      path.split = head_split(pr->out);
      if (!path.split) {
        refuse(block, *u, "a projection not split into heads", "q, k, v reshaped to [seq, heads, head_dim]");
        return add ? add->outputs[0] : -1;
      }
      path.end = path.split->outputs[0];
      if (const Node* qn = sole_user(path.end, "rms_norm")) {
        path.qk_norm = qn;
        path.end = qn->outputs[0];
      }
      if (const Node* rp = sole_user(path.end, "rope")) {
        path.rope = rp;
        path.end = rp->outputs[0];
      }
      paths.push_back(path);
    }
    // The cache and the attention the paths meet at.
    const Node* cache = nullptr;
    const Node* attn = nullptr;
    int q = -1, k = -1, v = -1;
    for (int i = 0; i < 3; ++i)
      for (const Node* u : open_users(paths[i].end)) {
        if (u->op == "kv_cache") {
          cache = u;
          (u->inputs[0] == paths[i].end ? k : v) = i;
        } else if (u->op == "attention" && u->inputs[0] == paths[i].end) {
          attn = u;
          q = i;
        }
      }
    if (!cache || !attn || q < 0 || k < 0 || v < 0) {
      refuse(block, attn ? *attn : *norm, !cache ? "no KV cache: the attention does not keep its keys and values" : "q, k and v do not meet at one cache and one attention",
             "a causal attention over a KV cache");
      return add ? add->outputs[0] : -1;
    }
    if (!paths[q].rope || !paths[k].rope || paths[v].rope || paths[v].qk_norm) {
      refuse(block, *attn, "RoPE is not on q and k alone", "RoPE on q and k");
      return add ? add->outputs[0] : -1;
    }
    if (attn->inputs[1] != cache->outputs[0] || attn->inputs[2] != cache->outputs[1]) {
      refuse(block, *attn, "the attention does not read the cache's keys and values", "attention over the KV cache");
      return add ? add->outputs[0] : -1;
    }
    bool ok = true;
    if (attn->inputs.size() > 3 && attn->inputs[3] >= 0) ok = false, refuse(block, *attn, "an attention bias", "a bias input to the attention unit");
    if (!attn->attrs.value("causal", true)) ok = false, refuse(block, *attn, "non-causal attention", "a bidirectional attention unit (an encoder's)");
    const int64_t window = attn->attrs.value("window", int64_t(0));
    if (window > 0 && window < opt.max_context)
      ok = false, refuse(block, *attn, "a sliding window of " + std::to_string(window) + " positions, smaller than the context (" + std::to_string(opt.max_context) + ")",
                         "a windowed attention unit, or a context no longer than the window");
    if (attn->attrs.value("softcap", 0.0) != 0.0) ok = false, refuse(block, *attn, "attention logit softcapping", "a softcap in the attention unit");
    // The output projection and the residual add.
    const Node* merge = sole_user(attn->outputs[0], "reshape");
    std::optional<Projection> o = merge ? projection(sole_user(merge->outputs[0], "matmul"), block) : std::nullopt;
    if (!o) {
      refuse(block, *attn, "the attention's heads do not go straight to an output projection", "heads merged into one matvec");
      return add ? add->outputs[0] : -1;
    }
    auto after = open_users(o->out);
    if (after.size() == 1 && after[0]->op == "rms_norm") {
      refuse(block, *after[0], "a norm after the mixer (on the attention's output, before the residual add)",
             "a norm unit between the output projection and the residual add");
      return add ? add->outputs[0] : -1;
    }
    if (!add || after.size() != 1 || after[0] != add) {
      refuse(block, after.empty() ? *o->matmul : *after[0], "the output projection is not added to the residual", "a residual add");
      return add ? add->outputs[0] : -1;
    }
    if (!ok) return add->outputs[0];

    // The units, in the engine's order.
    const int64_t H = dim(paths[q].end, 1), KH = dim(paths[k].end, 1), Dh = dim(paths[q].end, 2), Dv = dim(paths[v].end, 2);
    const int layer = int(p.caches.size());
    auto qkv = matvec(block, "qkv", {paths[q].proj, paths[k].proj, paths[v].proj}, "qkv");
    if (!qkv) return -1;
    const Slot qs = qkv->writes[0], ks = qkv->writes[1], vs = qkv->writes[2];
    write(*qkv, {x}, *paths[q].proj.matmul);
    for (int i : {q, k}) claim(paths[i].split);
    claim(paths[v].split);
    for (int i : {q, k}) {
      const Path& pt = paths[i];
      const Slot s = i == q ? qs : ks;
      if (pt.qk_norm) {
        auto nw = bind(block, *pt.qk_norm, "weight", {pt.qk_norm->inputs[1]});
        if (!nw) return -1;
        claim(pt.qk_norm);
        Unit u{.kind = "head_norm", .block = block};
        u.reads = {s};
        u.writes = {s};
        u.constants = {*nw};
        u.attrs = {{"eps", pt.qk_norm->attrs.value("eps", 1e-6)}, {"heads", dim(pt.end, 1)}, {"head_dim", dim(pt.end, 2)}};
        u.values = {name(pt.qk_norm->outputs[0])};
        u.ops = {op_str(*pt.split), op_str(*pt.qk_norm)};
        write(u, {pt.proj.out}, *pt.qk_norm);
      }
    }
    for (int i : {q, k}) {
      const Path& pt = paths[i];
      const Slot s = i == q ? qs : ks;
      const int in = pt.qk_norm ? pt.qk_norm->outputs[0] : pt.proj.out;
      claim(pt.rope);
      const std::string buf = i == q ? "q" : "k";
      need_buffer(buf, opt.profile.activations, dim(pt.end, 1) * dim(pt.end, 2));
      Unit u{.kind = "rope", .block = block};
      u.reads = {s};
      u.writes = {Slot{buf}};
      u.attrs = pt.rope->attrs;
      u.attrs["heads"] = dim(pt.end, 1);
      u.attrs["head_dim"] = dim(pt.end, 2);
      u.values = {name(pt.rope->outputs[0])};
      u.ops = {op_str(*pt.rope)};
      if (!pt.qk_norm) u.ops.insert(u.ops.begin(), op_str(*pt.split));
      write(u, {in}, *pt.rope);
    }
    claim(cache);
    p.caches.push_back(Cache{layer, KH, Dh, opt.max_context, opt.profile.cache});
    {
      Unit u{.kind = "kv_write", .block = block};
      u.reads = {Slot{"k"}, vs};
      u.writes = {Slot{"cache"}};
      u.attrs = {{"layer", layer}, {"kv_heads", KH}, {"head_dim", Dh}};
      u.values = {name(cache->outputs[0]), name(cache->outputs[1])};
      u.ops = {op_str(*paths[v].split), op_str(*cache)};
      write(u, {paths[k].end, paths[v].proj.out}, *cache);
    }
    claim(attn);
    need_buffer("attn", opt.profile.activations, H * Dv);
    {
      Unit u{.kind = "attention", .block = block};
      u.reads = {Slot{"q"}, Slot{"cache"}};
      u.writes = {Slot{"attn"}};
      u.attrs = {{"layer", layer}, {"heads", H}, {"kv_heads", KH}, {"head_dim", Dh},
                 {"scale", attn->attrs.value("scale", 1.0)}, {"causal", true}, {"window", 0}, {"softcap", 0.0}};
      u.values = {name(attn->outputs[0])};
      u.ops = {op_str(*attn)};
      write(u, {paths[q].end, -1}, *attn);
    }
    claim(merge);
    auto out = matvec(block, "o", {*o}, "attn_out");
    if (!out) return -1;
    out->reads = {Slot{"attn"}};
    out->ops.insert(out->ops.begin(), op_str(*merge));
    write(*out, {attn->outputs[0]}, *o->matmul);
    return residual_unit(block, *add, r, o->out, "attn_out");
  }

  int residual_unit(const std::string& block, const Node& add, int r, int branch, const std::string& from) {
    claim(&add);
    Unit u{.kind = "add", .block = block};
    u.reads = {Slot{"residual"}, Slot{from}};
    u.writes = {Slot{"residual"}};
    u.values = {name(add.outputs[0])};
    u.ops = {op_str(add)};
    write(u, {r, branch}, add);
    return add.outputs[0];
  }

  // The FFN block of layer `l`: the residual after it, or -1.
  int ffn_block(int r, int l) {
    const std::string block = "layers." + std::to_string(l) + ".ffn";
    const Node* add = residual_add(r);
    const Node* norm = norm_of(r, block, add);
    if (!norm) return add ? add->outputs[0] : -1;
    auto w = bind(block, *norm, "weight", {norm->inputs[1]});
    if (!w) return -1;
    const int x = norm->outputs[0];
    auto x_users = open_users(x);
    claim(norm);
    write(norm_unit(block, *norm, *w, false), {r}, *norm);
    for (const Node* u : x_users)
      if (u->op == "routed_matmul" || u->op == "topk") return add ? add->outputs[0] : -1;  // experts: refused above
    for (const Node* u : x_users)
      if (u->op != "matmul") {
        refuse(block, *u, "the FFN's input is read by " + u->op + (u->op == "topk" || u->op == "softmax" ? " (a router: experts)" : ""),
               u->op == "topk" || u->op == "softmax" ? "an experts unit (a router and routed matmuls)" : "a SwiGLU FFN");
        return add ? add->outputs[0] : -1;
      }
    if (x_users.size() != 2) {
      refuse(block, x_users.empty() ? *norm : *x_users[0],
             x_users.size() == 1 ? "a non-gated FFN (one up projection)" : "the FFN's input is read by " + std::to_string(x_users.size()) + " projections",
             "a SwiGLU FFN: gate and up projections, silu(gate) * up, down");
      return add ? add->outputs[0] : -1;
    }
    auto a = projection(x_users[0], block), b = projection(x_users[1], block);
    if (!a || !b) return add ? add->outputs[0] : -1;
    // The gate is the projection an activation reads; the activation times the up.
    const Node* act = nullptr;
    Projection gate, up;
    for (auto [gp, upp] : {std::pair{*a, *b}, std::pair{*b, *a}}) {
      auto u = open_users(gp.out);
      if (u.size() == 1 && u[0]->op != "mul") {
        act = u[0];
        gate = gp;
        up = upp;
        break;
      }
    }
    const Node* mul = act ? sole_user(act->outputs[0], "mul") : nullptr;
    if (!act || !mul || !(mul->inputs[0] == up.out || mul->inputs[1] == up.out)) {
      refuse(block, *x_users[0], "the two projections do not meet as act(gate) * up", "a gated FFN");
      return add ? add->outputs[0] : -1;
    }
    if (act->op != "silu") {
      refuse(block, *act, "a non-SwiGLU FFN: " + act->op + "(gate) * up", "a gated-activation unit for " + act->op);
      return add ? add->outputs[0] : -1;
    }
    auto down = projection(sole_user(mul->outputs[0], "matmul"), block);
    if (!down) {
      refuse(block, *mul, "the gated product does not go to a down projection", "a down matvec");
      return add ? add->outputs[0] : -1;
    }
    auto after = open_users(down->out);
    if (after.size() == 1 && after[0]->op == "rms_norm") {
      refuse(block, *after[0], "a norm after the FFN (before the residual add)", "a norm unit between the down projection and the add");
      return add ? add->outputs[0] : -1;
    }
    if (!add || after.size() != 1 || after[0] != add) {
      refuse(block, after.empty() ? *down->matmul : *after[0], "the down projection is not added to the residual", "a residual add");
      return add ? add->outputs[0] : -1;
    }
    auto gu = matvec(block, "gate_up", {gate, up}, "gate_up");
    if (!gu) return -1;
    const Slot gs = gu->writes[0], us = gu->writes[1];
    write(*gu, {x}, *gate.matmul);
    claim(act);
    claim(mul);
    need_buffer("act", opt.profile.activations, dim(mul->outputs[0], -1));
    Unit s{.kind = "swiglu", .block = block};
    s.reads = {gs, us};
    s.writes = {Slot{"act"}};
    s.attrs = {{"activation", act->op}};
    s.values = {name(mul->outputs[0])};
    s.ops = {op_str(*act), op_str(*mul)};
    write(s, {gate.out, up.out}, *act);
    auto dn = matvec(block, "down", {*down}, "ffn_out");
    if (!dn) return -1;
    dn->reads = {Slot{"act"}};
    write(*dn, {mul->outputs[0]}, *down->matmul);
    return residual_unit(block, *add, r, down->out, "ffn_out");
  }

  // The final norm, the head, the argmax and the advance.
  void head(int r) {
    const std::string block = "head";
    const Node* norm = norm_of(r, block, nullptr);
    if (!norm) return;
    auto w = bind(block, *norm, "weight", {norm->inputs[1]});
    if (!w) return;
    claim(norm);
    write(norm_unit(block, *norm, *w, true), {r}, *norm);
    auto hp = projection(sole_user(norm->outputs[0], "matmul"), block);
    if (!hp) {
      auto u = open_users(norm->outputs[0]);
      refuse(block, u.empty() ? *norm : *u[0], "the final norm does not go to one head projection", "a head matvec");
      return;
    }
    if (!is_graph_output(hp->out, "logits")) {
      auto u = open_users(hp->out);
      bool softcap = false;
      for (const Node* n : u) softcap |= n->op == "div" || n->op == "tanh" || n->op == "mul";
      refuse(block, u.empty() ? *hp->matmul : *u[0],
             softcap ? "final logit softcapping (cap * tanh(logits / cap))" : "the head's output is not the logits",
             softcap ? "a softcap unit after the head" : "the head writing the logits");
      return;
    }
    auto h = matvec(block, "head", {*hp}, "logits");
    if (!h) return;
    h->reads = {Slot{"normed"}};
    h->last_row = true;
    write(*h, {norm->outputs[0]}, *hp->matmul);
    need_buffer("token", "i32", 1);
    Unit am{.kind = "argmax", .block = block};
    am.reads = {Slot{"logits"}};
    am.writes = {Slot{"token"}};
    am.last_row = true;
    am.values = {"token"};
    am.ops = {"argmax (greedy)"};
    write(am, {hp->out}, *hp->matmul);
    Unit adv{.kind = "advance", .block = "advance"};
    adv.values = {"position"};
    adv.ops = {"position += rows; token carried"};
    write(adv, {}, *hp->matmul);
  }
};

}  // namespace

Lowering lower(const Graph& step, const LowerOptions& opt) {
  Reader r(step, opt);
  Program& p = r.p;
  p.family = opt.family.empty() ? step.family : opt.family;
  p.template_file = std::filesystem::path(opt.template_file).filename().string();
  p.graph = step.name;
  p.profile = opt.profile.path.empty() ? "(defaults)" : std::filesystem::path(opt.profile.path).filename().string();
  p.max_context = opt.max_context;
  p.numerics = opt.profile.to_json();
  p.versions = {Version{"decode", 1}, Version{"prompt", std::max<int64_t>(1, opt.chunk)}};
  const int tokens = step.find_input("tokens"), positions = step.find_input("positions");
  if (tokens < 0 || positions < 0 || step.find_value("logits") < 0) {
    r.refuse_graph("not a decoder's step: it takes no tokens and positions or gives no logits (an encoder)",
                   "a causal step graph: tokens and positions in, logits out");
    return Lowering{std::move(p), std::move(r.refusals)};
  }
  if (!step.held_inputs.empty()) {
    r.refuse_graph("the step holds state inputs: an encoder-decoder's decoder, cross-attending to the encoder's output",
                   "an encoder program and cross-attention units");
    return Lowering{std::move(p), std::move(r.refusals)};
  }
  // What the engine has no unit for, wherever it is in the graph.
  for (const Node& n : step.nodes) {
    const std::string block = n.outputs.empty() ? "?" : [&] {
      const std::string& v = r.name(n.outputs[0]);
      return v.rfind("layers.", 0) == 0 ? v.substr(0, v.find('.', 7)) : std::string("graph");
    }();
    if (n.op == "topk" || n.op == "routed_matmul")
      r.refuse(block, n, "experts (a router choosing routed matmuls)", "an experts unit", true);
    if (n.op == "attention" && !n.attrs.value("causal", true))
      r.refuse(block, n, "non-causal attention (an encoder's, or cross-attention)", "a bidirectional attention unit", true);
  }
  int h = r.embedding(tokens);
  for (int l = 0; h >= 0; ++l) {
    if (!r.residual_add(h)) break;  // no add: the final norm comes next
    h = r.attention_block(h, l);
    if (h < 0) break;
    h = r.ffn_block(h, l);
  }
  if (h >= 0) r.head(h);
  // Every op must be in some unit.
  if (r.refusals.empty())
    for (size_t n = 0; n < step.nodes.size(); ++n)
      if (!r.claimed[n]) r.refuse("graph", step.nodes[n], "an op in no block the engine reads", "a unit for " + step.nodes[n].op);
  return Lowering{std::move(p), std::move(r.refusals)};
}

std::string refusal_table(const std::vector<Refusal>& refusals) {
  std::ostringstream s;
  for (const auto& r : refusals)
    s << "  " << r.block << ": " << r.op << " (" << r.at << "): " << r.reason << "; needs " << r.needed << "\n";
  return s.str();
}

}  // namespace arch::npu2

#include "engine/distributed/tensor_split.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>
#include <span>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"


namespace arch {

int64_t block_granule(const Checkpoint& c) {
  int64_t granule = 1;
  for (const auto& [name, t] : c.tensors)
    granule = std::max<int64_t>(granule, is_kquant(t.dtype)                ? 256
                                         : t.dtype == DType::Q4_0           ? 64
                                         : is_block_quantized(t.dtype) ? kQuantBlock
                                                                            : 1);
  return granule;
}

std::pair<int64_t, int64_t> even_range(int64_t n, int rank, int ranks, int64_t step) {
  if (step < 1 || n % step) step = 1;
  const int64_t steps = n / step;
  return {steps * rank / ranks * step, steps * (rank + 1) / ranks * step};
}

namespace {

struct Use {
  int node = -1;
  size_t slot = 0;
};

// The ranges all of `asks` want, sorted and merged; whole where one wants
// it whole, they differ in axis, or they cut an axis a reader of the
// value's length alone needs whole (kAnyPart).
Part merged(const std::vector<Part>& asks) {
  std::vector<Part> parts;
  std::vector<int64_t> kept_whole;
  for (const Part& p : asks) (p.axis == kAnyPart ? void(kept_whole.push_back(p.ranges[0].first)) : parts.push_back(p));
  if (parts.empty()) return Part::whole();
  Part m{parts.front().axis, {}};
  for (const Part& p : parts) {
    if (p.is_whole() || p.axis != m.axis) return Part::whole();
    m.ranges.insert(m.ranges.end(), p.ranges.begin(), p.ranges.end());
  }
  for (int64_t axis : kept_whole)
    if (axis == m.axis) return Part::whole();
  std::sort(m.ranges.begin(), m.ranges.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& r : m.ranges) {
    if (!out.empty() && r.first <= out.back().second) out.back().second = std::max(out.back().second, r.second);
    else out.push_back(r);
  }
  m.ranges = out;
  return m;
}

// Whether p is all of an axis of `shape` (one range over all of it).
bool all_of(const Part& p, const Shape& shape) {
  return p.axis >= 0 && size_t(p.axis) < shape.size() && p.ranges.size() == 1 && p.ranges[0].first == 0 &&
         shape[size_t(p.axis)].concrete() && p.ranges[0].second == shape[size_t(p.axis)].n;
}

// Whether `have` holds every range of `want` (along the same axis), or is
// the whole value; a partial sum only itself.
bool holds(const Part& have, const Part& want) {
  if (have.is_whole()) return want.is_whole() || want.axis >= 0;
  if (have.axis != want.axis) return false;
  if (have.axis < 0) return have == want;
  for (const auto& [b, e] : want.ranges) {
    bool in = false;
    for (const auto& [hb, he] : have.ranges) in = in || (b >= hb && e <= he);
    if (!in) return false;
  }
  return true;
}

std::string where(const Graph& g, const Node& n) {
  return n.op + " (" + g.values[size_t(n.outputs[0])].name + ", " + str(n.loc) + ")";
}

class Splitter {
 public:
  Splitter(const Graph& g, const OpTable& ops, int rank, int ranks, int64_t granule)
      : g_(g), ops_(ops), rank_(rank), ranks_(ranks), granule_(std::max<int64_t>(granule, 1)) {
    uses_.resize(g.values.size());
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (size_t i = 0; i < g.nodes[n].inputs.size(); ++i)
        if (int v = g.nodes[n].inputs[i]; v >= 0) uses_[size_t(v)].push_back({int(n), i});
    is_output_.assign(g.values.size(), 0);
    for (const auto& o : g.outputs) is_output_[size_t(o.value)] = 1;
    from_weights_.assign(g.values.size(), 0);
    for (const auto& w : g.weights) from_weights_[size_t(w.value)] = 1;
    for (const Node& n : g.nodes) {
      bool all = true;
      for (int v : n.inputs) all = all && (v < 0 || from_weights_[size_t(v)]);
      for (int v : n.outputs) from_weights_[size_t(v)] = all;
    }
  }

  // The passes until no decision changes.
  void settle() {
    for (;;) {
      pass();
      bool changed = false;
      for (size_t n = 0; n < g_.nodes.size(); ++n)
        if (row_[n] && !worth(int(n))) {
          // Ranges on coarser steps next (whole heads where ranks do not
          // divide them: 5 heads over 2 as 3 and 2), else whole.
          if (!next_step(int(n))) {
            row_off_.insert(int(n));
            off_reason_[int(n)] = first_refusal_before(g_.nodes[n].inputs[0]);
          }
          changed = true;
        }
      for (const auto& o : g_.outputs)
        if (gather_candidate(o.value) && layout_[size_t(o.value)].is_whole()) gather_off_.insert(o.value), changed = true;
      if (!changed) break;
    }
  }

  // The part of each value that is a graph output this process makes
  // (whole: not made in part), after settle().
  std::vector<Part> output_layouts() const {
    std::vector<Part> out;
    for (const auto& o : g_.outputs) out.push_back(gathered_[size_t(o.value)] ? layout_[size_t(o.value)] : Part::whole());
    return out;
  }

  // `all`: output_layouts() of every process, in rank order (all_gather's
  // sizes, and the order its parts are put back in).
  Result<Graph> rebuild(TensorSplitReport* report, const std::vector<std::vector<Part>>& all);

 private:
  // The op's split rule asked for `want` of node n's outputs, on the node's
  // types as instantiated.
  Result<SplitAnswer> query(int n, const OpDef& def, std::span<const Part> want) const {
    const Node& node = g_.nodes[size_t(n)];
    std::vector<TypedShape> in, out;
    std::unique_ptr<bool[]> present(new bool[node.inputs.size() + 1]);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      in.push_back(v >= 0 ? g_.values[size_t(v)].type : TypedShape{});
      present[i] = v >= 0;
    }
    for (int v : node.outputs) out.push_back(g_.values[size_t(v)].type);
    return def.split(SplitQuery{in, {present.get(), node.inputs.size()}, out, node.attrs, want});
  }

  // x @ W^T on a weight (or what is made of weights alone: a stack of
  // experts), whose rule can cut its contraction: its length, else 0.
  // Asked once per node (the passes ask it again and again).
  int64_t contraction(int n) const {
    if (contractions_.empty()) {
      contractions_.assign(g_.nodes.size(), 0);
      for (size_t m = 0; m < g_.nodes.size(); ++m) {
        const Node& node = g_.nodes[m];
        const OpDef* def = ops_.find(node.op);
        bool weight = false, activation = false;
        for (int v : node.inputs)
          if (v >= 0) (from_weights_[size_t(v)] ? weight : activation) = true;
        if (!def || !def->split || !weight || !activation) continue;
        const Part probe{kPartialSum, {}};
        auto a = query(int(m), *def, {&probe, 1});
        if (a.ok()) contractions_[m] = a->contraction;
      }
    }
    return contractions_[size_t(n)];
  }

  // A rows-parallel choice pays where every activation it asks in part
  // was made in that part (not cut from a whole one); an embedding's table
  // rows ask nothing of its ids.
  bool worth(int n) const {
    const Node& node = g_.nodes[size_t(n)];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int v = node.inputs[i];
      if (v >= 0 && !from_weights_[size_t(v)] && !demand(n, i).is_whole() &&
          (layout_[size_t(v)].is_whole() || rounded_[size_t(v)]))
        return false;  // cut from a whole value, or from more than this process's part (whole heads)
    }
    return true;
  }

  // Whole quantized blocks first, where the contraction holds a multiple
  // of them for every process.
  int64_t step_of(int n) const {
    auto it = step_.find(n);
    if (it != step_.end()) return it->second;
    const int64_t k = contraction(n);
    return k % granule_ == 0 && k / granule_ >= ranks_ ? granule_ : 1;
  }

  // Row candidate n's next step: the next divisor of its contraction that
  // still leaves each process a step; false when there is none.
  bool next_step(int n) {
    const int64_t k = contraction(n);
    const int64_t from = step_of(n);
    for (int64_t s = from + 1; s <= k / ranks_; ++s)
      if (k % s == 0 && s % from == 0) {
        step_[n] = s;
        return true;
      }
    return false;
  }

  bool gather_candidate(int v) const {
    const Value& val = g_.values[size_t(v)];
    return !gather_off_.count(v) && val.producer >= 0 && !from_weights_[size_t(v)] && val.type.dtype == DType::F32 &&
           !val.type.shape.empty() && val.type.shape.back().concrete() && val.type.shape.back().n >= ranks_;
  }

  Part demand(int n, size_t slot) const {
    auto it = demand_.find({n, slot});
    return it == demand_.end() ? Part::whole() : it->second;
  }

  // From the graph's end back: each value made as its readers want it
  // where its op can, else whole.
  void pass() {
    layout_.assign(g_.values.size(), Part::whole());
    gathered_.assign(g_.values.size(), 0);
    rounded_.assign(g_.values.size(), 0);
    why_whole_.assign(g_.values.size(), "");
    demand_.clear();
    row_.assign(g_.nodes.size(), 0);
    attrs_.clear();
    for (const Node& n : g_.nodes) attrs_.push_back(n.attrs);
    for (int n = int(g_.nodes.size()) - 1; n >= 0; --n) {
      const Node& node = g_.nodes[size_t(n)];
      std::vector<Part> want(node.outputs.size());
      std::vector<char> wanted(node.outputs.size(), 0), open(node.outputs.size(), 0);
      bool any_part = false;
      // A graph output no op reads, beside outputs that ops read (a state
      // beside its op's main output), is asked in any part the op makes of
      // the others', rather than its own even range.
      bool read = false;
      for (int v : node.outputs) read = read || !uses_[size_t(v)].empty();
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const int v = node.outputs[k];
        std::vector<Part> asks;
        for (const Use& u : uses_[size_t(v)]) asks.push_back(demand(u.node, u.slot));
        if (is_output_[size_t(v)] && read && asks.empty() && node.outputs.size() > 1) {
          open[k] = 1;
        } else if (is_output_[size_t(v)]) {
          if (gather_candidate(v)) {
            const int64_t n_last = g_.values[size_t(v)].type.shape.back().n;
            auto [b, e] = even_range(n_last, rank_, ranks_);
            asks.push_back(Part::of(int(g_.values[size_t(v)].type.shape.size()) - 1, b, e));
          } else {
            asks.push_back(Part::whole());
          }
        }
        if (asks.empty()) continue;
        wanted[k] = 1;
        want[k] = merged(asks);
        if (want[k].is_whole() && std::any_of(asks.begin(), asks.end(), [](const Part& p) { return p.axis >= 0; }))
          why_whole_[size_t(v)] = why_read_whole(v);
        any_part = any_part || !want[k].is_whole();
      }
      const OpDef* def = ops_.find(node.op);
      if (!any_part) {  // an open output is then made whole, with the others
        const int64_t k_len = row_off_.count(n) ? 0 : contraction(n);
        if (k_len >= ranks_) {
          auto [b, e] = even_range(k_len, rank_, ranks_, step_of(n));
          std::vector<Part> partial(node.outputs.size(), Part{kPartialSum, {{b, e}}});
          if (ask(n, *def, partial)) row_[size_t(n)] = 1;
        }
        // A reader of its inputs' lengths alone (arange) takes them as held.
        if (!row_[size_t(n)] && def && def->split && shape_reader(n, *def)) {
          const std::vector<Part> whole(node.outputs.size(), Part::whole());
          ask(n, *def, whole);
        }
        continue;
      }
      // An output nobody reads is made in whatever part the others are;
      // an open one in whatever part the op says it makes of it, else so.
      std::vector<Part> open_want = want;
      for (size_t k = 0; k < want.size(); ++k)
        if (!wanted[k] && !open[k])
          for (size_t j = 0; j < want.size(); ++j)
            if (wanted[j] && !want[j].is_whole()) {
              want[k] = open_want[k] = want[j];
              break;
            }
      bool any_open = false;
      for (size_t k = 0; k < want.size(); ++k)
        if (open[k]) {
          open_want[k] = Part{kOpenPart, {}};
          any_open = true;
          for (size_t j = 0; j < want.size(); ++j)
            if (wanted[j] && !want[j].is_whole()) {
              want[k] = want[j];
              break;
            }
        }
      std::string why;
      std::vector<Part> made;
      if (!def || !def->split) why = "it has no split rule";
      else if ((any_open && ask(n, *def, open_want, nullptr, &made)) || ask(n, *def, want, &why, &made)) {
        for (size_t k = 0; k < node.outputs.size(); ++k) {
          const int v = node.outputs[k];
          layout_[size_t(v)] = made[k];
          rounded_[size_t(v)] = wanted[k] && made[k] != want[k];
          gathered_[size_t(v)] = is_output_[size_t(v)] && !made[k].is_whole();
        }
        continue;
      }
      // All of an axis asked is the whole value: nothing is lost.
      bool all = true;
      for (size_t k = 0; k < want.size(); ++k)
        all = all && (want[k].is_whole() || all_of(want[k], g_.values[size_t(node.outputs[k])].type.shape));
      if (all) continue;
      for (int v : node.outputs)
        if (why_whole_[size_t(v)].empty()) why_whole_[size_t(v)] = where(g_, node) + ": " + why;
    }
  }

  // Why v, asked for in part by some readers, is read whole by another:
  // that reader's own refusal where it has one, else the reader.
  std::string why_read_whole(int v) const {
    for (const Use& u : uses_[size_t(v)])
      if (demand(u.node, u.slot).axis == -1) {
        for (int o : g_.nodes[size_t(u.node)].outputs)
          if (!why_whole_[size_t(o)].empty()) return why_whole_[size_t(o)];
        return "read whole by " + where(g_, g_.nodes[size_t(u.node)]);
      }
    return is_output_[size_t(v)] ? "an output of the graph, wanted whole" : "read in parts along different axes";
  }

  // Whether the op's rule, asked for its outputs whole, asks nothing of its
  // inputs but their lengths (kAnyPart).
  bool shape_reader(int n, const OpDef& def) const {
    const std::vector<Part> whole(g_.nodes[size_t(n)].outputs.size(), Part::whole());
    auto a = query(n, def, whole);
    if (!a.ok()) return false;
    for (const Part& p : a->inputs)
      if (p.axis != kAnyPart && p.axis != -1) return false;
    return true;
  }

  // Asks the op's rule for `want`; on an answer it can take, sets its
  // inputs' demands and its attributes.
  // `made`: the part of each output it then makes (as wanted, or more:
  // SplitAnswer::outputs).
  bool ask(int n, const OpDef& def, const std::vector<Part>& want, std::string* why = nullptr,
           std::vector<Part>* made = nullptr) {
    const Node& node = g_.nodes[size_t(n)];
    auto a = query(n, def, want);
    if (!a.ok()) {
      if (why) *why = a.error().message;
      return false;
    }
    std::vector<Part> outs = a->outputs.empty() ? want : a->outputs;
    for (size_t k = 0; k < want.size(); ++k)
      if (k >= outs.size() || (want[k].axis == kOpenPart ? outs[k].axis < 0 : !holds(outs[k], want[k]))) {
        if (why) *why = "its split rule makes output " + std::to_string(k) + " in a part that does not hold the one wanted";
        return false;
      }
    if (a->inputs.size() < node.inputs.size()) {
      if (why) *why = "its split rule answers for fewer inputs than it has";
      return false;
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Part& p = a->inputs[i];
      if (node.inputs[i] < 0 || p.is_whole()) continue;
      const Shape& s = g_.values[size_t(node.inputs[i])].type.shape;
      if (p.axis >= int(s.size()) || !s[size_t(p.axis)].concrete() || p.ranges.empty() ||
          p.ranges.back().second > s[size_t(p.axis)].n) {
        if (why) *why = "its split rule asks for input " + std::to_string(i) + " in a part it cannot have (" + part_str(p) + ")";
        return false;
      }
    }
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] >= 0 && (a->inputs[i].axis >= 0 || a->inputs[i].axis == kAnyPart))
        demand_[{n, i}] = a->inputs[i];
    attrs_[size_t(n)] = a->attrs;
    if (made) *made = std::move(outs);
    return true;
  }

  Result<Graph> rebuild(TensorSplitReport* report);

  // Why what node n makes is not made in part: the first op reading it,
  // directly or through others, that refused the part asked of it.
  std::string first_refusal_after(int n) const {
    std::vector<char> seen(g_.values.size(), 0);
    std::vector<int> todo(g_.nodes[size_t(n)].outputs.begin(), g_.nodes[size_t(n)].outputs.end());
    std::string best;
    int best_node = INT32_MAX;
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      if (seen[size_t(v)]) continue;
      seen[size_t(v)] = 1;
      for (const Use& u : uses_[size_t(v)]) {
        auto off = off_reason_.find(u.node);
        if (off != off_reason_.end() && !off->second.empty() && u.node < best_node)
          best = off->second, best_node = u.node;
        for (int o : g_.nodes[size_t(u.node)].outputs) {
          if (!why_whole_[size_t(o)].empty() && u.node < best_node) best = why_whole_[size_t(o)], best_node = u.node;
          if (u.node < n + 64) todo.push_back(o);
        }
      }
    }
    return best;
  }

  // Why `value` was not made in part: its own refusal, else the latest
  // refusal among what it is made of.
  std::string first_refusal_before(int value) const {
    std::vector<char> seen(g_.values.size(), 0);
    std::vector<int> todo{value};
    std::string best;
    int best_node = -1;
    const int limit = g_.values[size_t(value)].producer - 64;
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      const int p = g_.values[size_t(v)].producer;
      if (seen[size_t(v)] || p < 0 || p < limit) continue;
      seen[size_t(v)] = 1;
      if (!why_whole_[size_t(v)].empty() && p > best_node) best = why_whole_[size_t(v)], best_node = p;
      for (int in : g_.nodes[size_t(p)].inputs)
        if (in >= 0) todo.push_back(in);
    }
    return best;
  }

  const Graph& g_;
  const OpTable& ops_;
  const int rank_, ranks_;
  const int64_t granule_;
  std::vector<std::vector<Use>> uses_;
  std::vector<char> is_output_, from_weights_;
  std::set<int> row_off_, gather_off_;
  std::map<int, std::string> off_reason_;
  std::map<int, int64_t> step_;  // a row candidate's ranges fall on multiples of this
  mutable std::vector<int64_t> contractions_;  // by node (contraction())  // a row candidate turned off: why its input was whole
  // One pass's decisions.
  std::vector<Part> layout_;
  std::vector<char> gathered_;
  std::vector<char> rounded_;  // made larger than its readers ask (whole heads): they slice theirs
  std::vector<std::string> why_whole_;
  std::map<std::pair<int, size_t>, Part> demand_;
  std::vector<char> row_;
  std::vector<Attrs> attrs_;
};

std::string ranges_str(const Part& p) {
  std::string s;
  for (const auto& [b, e] : p.ranges) s += (s.empty() ? "" : ",") + std::to_string(b) + ":" + std::to_string(e);
  return "@" + std::to_string(p.axis) + "[" + s + "]";
}

Result<Graph> Splitter::rebuild(TensorSplitReport* report, const std::vector<std::vector<Part>>& all) {
  Graph out;
  out.family = g_.family;
  out.name = g_.name;
  out.values = g_.values;
  out.inputs = g_.inputs;
  out.held_inputs = g_.held_inputs;
  out.outputs = g_.outputs;
  out.input_defaults = g_.input_defaults;
  std::map<std::pair<int, std::string>, int> made;  // (value, part) -> the value holding that part
  std::set<int> read_whole;                         // weights some node reads whole
  std::vector<int> part_of(g_.values.size(), -1);   // a gathered value's part, before the all_gather
  TensorSplitReport rep;
  auto new_value = [&](const std::string& name, const SourceLoc& loc, TypedShape type) {
    return out.add_value(Value{name, std::move(type), -1, loc});
  };
  // Value v as part p, made from what holds it (slices, and a concat
  // where the part is several ranges).
  auto as_part = [&](int v, const Part& p, const SourceLoc& loc) -> Result<int> {
    const Part& have = layout_[size_t(v)];
    const int held = gathered_[size_t(v)] ? part_of[size_t(v)] : v;
    if (p.axis == kAnyPart) return held;  // its length alone is read, along an axis not cut
    if (p.is_whole()) {
      if (!have.is_whole() && !gathered_[size_t(v)])
        return error("tensor split: " + g_.values[size_t(v)].name + " is wanted whole but made in part");
      if (g_.weight_of(v)) read_whole.insert(v);
      return v;
    }
    if (p == have) return held;
    if (have.is_whole() && !gathered_[size_t(v)] && all_of(p, g_.values[size_t(v)].type.shape)) {
      if (g_.weight_of(v)) read_whole.insert(v);
      return v;  // all of it
    }
    const std::string key = part_str(p);
    if (auto it = made.find({v, key}); it != made.end()) return it->second;
    const Value& val = g_.values[size_t(v)];
    TypedShape type = val.type;
    type.shape[size_t(p.axis)] = Dim::of(p.size());
    if (const WeightRef* w = g_.weight_of(v)) {
      WeightRef ref = *w;
      ref.part = p;
      ref.value = new_value(val.name + ranges_str(p), val.loc, type);
      out.weights.push_back(ref);
      ++rep.weights_in_part;
      return made[{v, key}] = ref.value;
    }
    // Each range where it lies in what is held.
    std::vector<std::pair<int64_t, int64_t>> local;
    for (const auto& [b, e] : p.ranges) {
      if (have.is_whole()) {
        local.push_back({b, e});
        continue;
      }
      if (have.axis != p.axis) return error("tensor split: " + val.name + " is held in part along another axis");
      int64_t at = 0;
      bool found = false;
      for (const auto& [hb, he] : have.ranges) {
        if (b >= hb && e <= he) {
          local.push_back({at + b - hb, at + e - hb});
          found = true;
          break;
        }
        at += he - hb;
      }
      if (!found) return error("tensor split: " + val.name + " does not hold the range wanted of it");
    }
    std::vector<int> pieces;
    for (const auto& [b, e] : local) {
      TypedShape piece = type;
      piece.shape[size_t(p.axis)] = Dim::of(e - b);
      const int id = new_value(val.name + ranges_str(Part::of(p.axis, b, e)), loc, piece);
      out.nodes.push_back(Node{"slice", {held}, {id}, Attrs{{"axis", p.axis}, {"start", b}, {"end", e}}, loc});
      pieces.push_back(id);
    }
    int id = pieces.front();
    if (pieces.size() > 1) {
      id = new_value(val.name + ranges_str(p), loc, type);
      out.nodes.push_back(Node{"concat", pieces, {id}, Attrs{{"axis", p.axis}}, loc});
    }
    return made[{v, key}] = id;
  };

  // Output v whole from every process's part (`all`, in rank order): one
  // all_gather, then, where the parts are not the whole in order (a
  // state's channels q | k | v per process, heads held twice), each range
  // taken from the first process holding it.
  std::map<int, size_t> output_at;
  for (size_t o = 0; o < g_.outputs.size(); ++o) output_at.emplace(g_.outputs[o].value, o);
  auto gather = [&](int v, int part, const std::vector<std::vector<Part>>& parts, std::vector<Node>& after) -> Status {
    const Value& val = g_.values[size_t(v)];
    const int axis = layout_[size_t(v)].axis;
    const int64_t n_all = val.type.shape[size_t(axis)].n;
    struct Held {
      int64_t begin, end, at;  // [begin, end) of v, at `at` in the gathered tensor
    };
    std::vector<Held> held;
    std::vector<int64_t> sizes;
    int64_t at = 0;
    for (const auto& of_rank : parts) {
      const Part& p = of_rank[output_at.at(v)];
      if (p.axis != axis) return error("tensor split: the processes make " + val.name + " in parts along different axes");
      sizes.push_back(p.size());
      for (const auto& [b, e] : p.ranges) held.push_back({b, e, at}), at += e - b;
    }
    std::vector<std::pair<int64_t, int64_t>> picks;  // of the gathered tensor, in v's order
    for (int64_t x = 0; x < n_all;) {
      auto h = std::find_if(held.begin(), held.end(), [&](const Held& h) { return h.begin <= x && x < h.end; });
      if (h == held.end())
        return error("tensor split: no process makes " + val.name + "'s [" + std::to_string(x) + "] along axis " +
                     std::to_string(axis));
      if (!picks.empty() && picks.back().second == h->at + x - h->begin) picks.back().second = h->at + h->end - h->begin;
      else picks.push_back({h->at + x - h->begin, h->at + h->end - h->begin});
      x = h->end;
    }
    if (picks.size() == 1 && picks[0] == std::make_pair(int64_t(0), at)) {
      after.push_back(Node{"all_gather", {part}, {v}, Attrs{{"axis", axis}, {"sizes", sizes}}, val.loc});
      return {};
    }
    TypedShape type = val.type;
    type.shape[size_t(axis)] = Dim::of(at);
    const int all_parts = new_value(val.name + ".parts", val.loc, type);
    after.push_back(Node{"all_gather", {part}, {all_parts}, Attrs{{"axis", axis}, {"sizes", sizes}}, val.loc});
    std::vector<int> pieces;
    for (const auto& [b, e] : picks) {
      type.shape[size_t(axis)] = Dim::of(e - b);
      pieces.push_back(picks.size() == 1 ? v : new_value(val.name + ranges_str(Part::of(axis, b, e)), val.loc, type));
      after.push_back(Node{"slice", {all_parts}, {pieces.back()}, Attrs{{"axis", axis}, {"start", b}, {"end", e}}, val.loc});
    }
    if (picks.size() > 1) after.push_back(Node{"concat", pieces, {v}, Attrs{{"axis", axis}}, val.loc});
    return {};
  };

  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    Node node = g_.nodes[n];
    node.attrs = attrs_[n];
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (node.inputs[i] >= 0) {
        ARCH_TRY(node.inputs[i], as_part(node.inputs[i], demand(int(n), i), node.loc));
      }
    std::vector<Node> after;
    for (size_t k = 0; k < node.outputs.size(); ++k) {
      const int v = node.outputs[k];
      if (row_[n]) {
        const int partial = new_value(g_.values[size_t(v)].name + ".partial", node.loc, g_.values[size_t(v)].type);
        after.push_back(Node{"all_reduce", {partial}, {v}, Attrs::object(), node.loc});
        node.outputs[k] = partial;
        ++rep.all_reduces;
      } else if (gathered_[size_t(v)]) {
        const int part = new_value(g_.values[size_t(v)].name + ".part", node.loc, g_.values[size_t(v)].type);
        part_of[size_t(v)] = part;
        node.outputs[k] = part;
        ARCH_TRY_STATUS(gather(v, part, all, after));
        ++rep.all_gathers;
      }
    }
    out.nodes.push_back(std::move(node));
    for (auto& a : after) out.nodes.push_back(std::move(a));
  }
  // Graph outputs that are weights are read whole.
  for (const auto& o : g_.outputs)
    if (g_.weight_of(o.value)) read_whole.insert(o.value);
  for (const auto& w : g_.weights)
    if (read_whole.count(w.value)) out.weights.push_back(w);

  // Every node's types again, in order: the parts' shapes, checked by each
  // op's own shape rule.
  for (auto& v : out.values) v.producer = -1;
  for (const auto& w : out.weights) {
    Value& val = out.values[size_t(w.value)];
    if (!w.part.is_whole()) val.type.shape[size_t(w.part.axis)] = Dim::of(w.part.size());
  }
  for (size_t n = 0; n < out.nodes.size(); ++n) {
    const Node& node = out.nodes[n];
    const OpDef* def = ops_.find(node.op);
    if (!def) return error("tensor split: no op '" + node.op + "'");
    std::vector<TypedShape> in;
    std::unique_ptr<bool[]> present(new bool[node.inputs.size() + 1]);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      present[i] = node.inputs[i] >= 0;
      in.push_back(node.inputs[i] >= 0 ? out.values[size_t(node.inputs[i])].type : TypedShape{});
    }
    auto types = def->shape(in, {present.get(), node.inputs.size()}, node.attrs);
    if (!types.ok())
      return error("tensor split: " + where(out, node) + " in part: " + types.error().message);
    for (size_t k = 0; k < node.outputs.size() && k < types->size(); ++k) {
      out.values[size_t(node.outputs[k])].type = (*types)[k];
      out.values[size_t(node.outputs[k])].producer = int(n);
    }
  }

  // Weights held whole by every process where a matmul reads them: why,
  // and a refusal where one is large.
  int64_t largest = 0;
  auto elements = [&](int v) {
    int64_t e = 1;
    for (const Dim& d : g_.values[size_t(v)].type.shape) e *= d.concrete() ? d.n : 1;
    return e;
  };
  for (const auto& w : g_.weights) largest = std::max(largest, elements(w.value));
  for (size_t n = 0; n < g_.nodes.size(); ++n) {
    const Node& node = g_.nodes[n];
    if ((node.op != "matmul" && node.op != "routed_matmul") || row_[n] || node.inputs.size() < 2 || node.inputs[1] < 0)
      continue;
    const int b = node.inputs[1];
    if (!from_weights_[size_t(b)] || !layout_[size_t(b)].is_whole() || !demand(int(n), 1).is_whole()) continue;
    const int a = node.inputs[0];
    std::string why = a >= 0 ? why_whole_[size_t(a)] : "";
    for (int v : node.outputs)
      if (why.empty()) why = why_whole_[size_t(v)];
    if (why.empty()) why = first_refusal_after(int(n));
    const std::string line = g_.values[size_t(b)].name + " (read by " + where(g_, node) + ")" +
                             (why.empty() ? "" : ": " + why);
    // What a stack of weights stores counts as its own size.
    int64_t size = elements(b);
    if (size * 8 >= largest)
      return error("tensor split over " + std::to_string(ranks_) + " processes: the graph cannot be split at " + line +
                   "; every process would hold that weight whole");
    rep.whole.push_back(line);
  }
  if (report) *report = rep;
  return out;
}

}  // namespace

Result<Graph> split_tensors(const Graph& g, const OpTable& ops, int rank, int ranks, TensorSplitReport* report,
                            int64_t granule) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    return error("tensor split: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  if (ranks == 1) {
    if (report) *report = {};
    return g;
  }
  // Every process's parts of the outputs it gathers: where they are not
  // even ranges, each must know the others' to put the whole together.
  std::vector<std::vector<Part>> all(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    if (r != rank) {
      Splitter other(g, ops, r, ranks, granule);
      other.settle();
      all[size_t(r)] = other.output_layouts();
    }
  Splitter mine(g, ops, rank, ranks, granule);
  mine.settle();
  all[size_t(rank)] = mine.output_layouts();
  return mine.rebuild(report, all);
}

}  // namespace arch

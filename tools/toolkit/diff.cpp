#include "tools/toolkit/diff.h"

#include <algorithm>
#include <cmath>

#include "engine/runtime/forward.h"
#include "engine/runtime/generate.h"
#include "kernels/kernels.h"

namespace arch {

namespace {

std::map<std::string, int> by_name(const Graph& g) {
  std::map<std::string, int> m;
  for (size_t i = 0; i < g.values.size(); ++i) m.emplace(g.values[i].name, int(i));
  return m;
}

std::string describe_inputs(const Graph& g, const Node& n) {
  std::string s;
  for (int in : n.inputs) s += (s.empty() ? "" : ", ") + (in < 0 ? std::string("_") : g.values[in].name);
  return "(" + s + ")";
}

}  // namespace

std::vector<GraphChange> diff_graphs(const Graph& a, const Graph& b) {
  std::vector<GraphChange> out;
  auto na = by_name(a), nb = by_name(b);
  for (size_t i = 0; i < a.values.size(); ++i) {
    const Value& va = a.values[i];
    auto it = nb.find(va.name);
    if (it == nb.end()) {
      out.push_back({GraphChange::Removed, va.name,
                     va.producer >= 0 ? a.nodes[va.producer].op : std::string(a.weight_of(int(i)) ? "weight" : "input")});
      continue;
    }
    const Value& vb = b.values[it->second];
    std::vector<std::string> what;
    if (shape_str(va.type.shape) != shape_str(vb.type.shape))
      what.push_back("shape " + shape_str(va.type.shape) + " -> " + shape_str(vb.type.shape));
    const WeightRef* wa = a.weight_of(int(i));
    const WeightRef* wb = b.weight_of(it->second);
    if ((wa != nullptr) != (wb != nullptr) || (wa && wb && wa->tensor != wb->tensor))
      what.push_back("bound to " + (wa ? wa->tensor : std::string("-")) + " -> " + (wb ? wb->tensor : std::string("-")));
    if ((va.producer >= 0) != (vb.producer >= 0)) {
      what.push_back("computed -> not computed");
    } else if (va.producer >= 0) {
      const Node& x = a.nodes[va.producer];
      const Node& y = b.nodes[vb.producer];
      if (x.op != y.op) what.push_back("op " + x.op + " -> " + y.op);
      for (auto& [k, v] : x.attrs.items()) {
        auto other = y.attrs.find(k);
        if (other == y.attrs.end()) what.push_back(k + " " + v.dump() + " -> (none)");
        else if (*other != v) what.push_back(k + " " + v.dump() + " -> " + other->dump());
      }
      for (auto& [k, v] : y.attrs.items())
        if (!x.attrs.contains(k)) what.push_back(k + " (none) -> " + v.dump());
      std::string ia = describe_inputs(a, x), ib = describe_inputs(b, y);
      if (ia != ib) what.push_back("inputs " + ia + " -> " + ib);
    }
    if (!what.empty()) {
      std::string d;
      for (auto& w : what) d += (d.empty() ? "" : "; ") + w;
      out.push_back({GraphChange::Changed, va.name, d});
    }
  }
  for (size_t i = 0; i < b.values.size(); ++i)
    if (!na.count(b.values[i].name))
      out.push_back({GraphChange::Added, b.values[i].name,
                     b.values[i].producer >= 0 ? b.nodes[b.values[i].producer].op
                                               : std::string(b.weight_of(int(i)) ? "weight" : "input")});
  return out;
}

namespace {

ValueChange compare_values(const std::string& name, const Tensor& x, const Tensor& y, const Tolerance& tol) {
  ValueChange c;
  c.value = name;
  double ref_max = 0;
  const float* a = x.f32();
  const float* b = y.f32();
  for (int64_t i = 0; i < x.numel(); ++i) {
    ref_max = std::max(ref_max, double(std::abs(a[i])));
    double e = std::abs(double(a[i]) - double(b[i]));
    if (!(e <= c.max_abs)) c.max_abs = std::isnan(e) ? INFINITY : e;
  }
  c.rel = ref_max > 0 ? c.max_abs / ref_max : c.max_abs;
  c.bound = tol.rel * ref_max + tol.abs;
  return c;
}

// Every value of one run, by id.
Result<std::map<int, Tensor>> run_all(const Model& m, const std::map<std::string, Tensor>& inputs) {
  std::vector<int> keep;
  for (size_t i = 0; i < m.graph().values.size(); ++i) keep.push_back(int(i));
  return run_with_inputs(m, inputs, keep);
}

}  // namespace

Result<NumericDiff> diff_runs(const Model& ma, const Model& mb, const std::map<std::string, Tensor>& inputs,
                              int greedy_tokens) {
  NumericDiff d;
  const Graph& a = ma.graph();
  const Graph& b = mb.graph();
  ARCH_TRY(auto va, run_all(ma, inputs));
  ARCH_TRY(auto vb, run_all(mb, inputs));
  auto nb = by_name(b);
  for (size_t i = 0; i < a.values.size(); ++i) {
    auto it = nb.find(a.values[i].name);
    if (it == nb.end() || a.weight_of(int(i))) continue;
    const Tensor& x = va[int(i)];
    const Tensor& y = vb[it->second];
    if (!x.data || !y.data || x.shape != y.shape || x.dtype != DType::F32 || y.dtype != DType::F32) continue;
    Tolerance tol;
    if (a.values[i].producer >= 0)
      if (const OpDef* def = op_table().find(a.nodes[a.values[i].producer].op)) tol = def->tolerance;
    ValueChange c = compare_values(a.values[i].name, x, y, tol);
    if (d.first_beyond.empty() && !c.within()) d.first_beyond = c.value;
    d.values.push_back(c);
  }
  for (const auto& o : a.outputs)
    for (const auto& p : b.outputs)
      if (o.name == p.name && o.index == p.index && va[o.value].shape == vb[p.value].shape &&
          va[o.value].dtype == DType::F32)
        d.outputs.push_back(compare_values(o.index >= 0 ? o.name + "[" + std::to_string(o.index) + "]" : o.name,
                                           va[o.value], vb[p.value], Tolerance{1e-4, 1e-5}));
  // Decoders: do the greedy continuations agree?
  auto ids = inputs.find("input_ids");
  if (greedy_tokens > 0 && ids != inputs.end() && a.find_input("tokens") >= 0 && b.find_input("tokens") >= 0) {
    const Tensor& t = ids->second;  // I32 or I64, with or without a batch dim of 1
    std::vector<int32_t> prompt;
    for (int64_t i = 0; i < t.numel(); ++i)
      prompt.push_back(t.dtype == DType::I64 ? int32_t(static_cast<const int64_t*>(t.data)[i]) : t.i32()[i]);
    GenerateOptions opt;
    opt.max_new_tokens = greedy_tokens;
    ARCH_TRY(auto ga, generate(ma, prompt, opt));
    ARCH_TRY(auto gb, generate(mb, prompt, opt));
    d.greedy_total = greedy_tokens;
    while (d.greedy_agree < greedy_tokens && size_t(d.greedy_agree) < ga.tokens.size() &&
           size_t(d.greedy_agree) < gb.tokens.size() && ga.tokens[d.greedy_agree] == gb.tokens[d.greedy_agree])
      ++d.greedy_agree;
  }
  return d;
}

}  // namespace arch

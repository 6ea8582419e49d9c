#include "tools/toolkit/checkpoint_check.h"

#include "engine/core/finite.h"

#include <cmath>
#include <set>

#include "engine/runtime/bind.h"
#include "engine/runtime/dispatch.h"
#include "engine/runtime/unread.h"

namespace arch {

namespace {

double mean_of(const Tensor& t) {
  Tensor f = to_f32(t);
  double s = 0;
  for (int64_t i = 0; i < f.numel(); ++i) s += f.f32()[i];
  return f.numel() ? s / double(f.numel()) : 0;
}

// The constant a value holds, if it is one.
bool constant_value(const Graph& g, int v, double* out) {
  int p = g.values[v].producer;
  if (p < 0 || g.nodes[p].op != "constant") return false;
  *out = g.nodes[p].attrs.value("value", 0.0);
  return true;
}

// Norm weights: the scale a norm applies is w, or 1 + w where the template
// adds 1. A scale averaging near 0 would all but erase the activations: the
// weights are then almost surely read in the wrong convention.
void check_norms(const Graph& g, const Checkpoint& ckpt, std::set<std::string>& seen, CheckpointFindings& f) {
  for (const auto& n : g.nodes) {
    if ((n.op != "rms_norm" && n.op != "layer_norm") || n.inputs.size() < 2 || n.inputs[1] < 0) continue;
    int w = n.inputs[1];
    bool plus_one = false;
    const WeightRef* ref = g.weight_of(w);
    if (!ref && g.values[w].producer >= 0 && g.nodes[g.values[w].producer].op == "add") {
      const Node& add = g.nodes[g.values[w].producer];
      double c = 0;
      if (add.inputs.size() == 2 && g.weight_of(add.inputs[0]) && constant_value(g, add.inputs[1], &c) && c == 1.0) {
        ref = g.weight_of(add.inputs[0]);
        plus_one = true;
      }
    }
    if (!ref || !seen.insert(ref->tensor).second) continue;
    const Tensor* t = ckpt.find(ref->tensor);
    if (!t || t->numel() < 8) continue;
    double mean = mean_of(*t), scale = plus_one ? 1.0 + mean : mean;
    if (std::abs(scale) < 0.2)
      f.warnings.push_back(str(n.loc) + ": warning: " + ref->tensor + " averages " + std::to_string(mean) +
                           ": read as " + (plus_one ? "1 + w" : "w") + " the norm would scale by about " +
                           std::to_string(scale) + (plus_one ? "; is it stored as it is?" : "; is it stored as w - 1?"));
  }
}

}  // namespace

CheckpointFindings check_against_checkpoint(const std::vector<const Graph*>& graphs, const Checkpoint& ckpt,
                                            const std::vector<dsl::UnreadDecl>& unread) {
  CheckpointFindings f;
  std::set<std::string> reported;  // a tensor several graphs read: once
  for (const Graph* g : graphs)
    for (const auto& w : g->weights) {
      if (!reported.insert(w.tensor).second) continue;
      const Tensor* t = ckpt.find(w.tensor);
      if (!t) {
        f.errors.push_back(str(w.loc) + ": error: the template reads " + w.tensor + ", which " + ckpt.dir + " lacks");
        continue;
      }
      if (const int64_t bad = non_finite_values(*t))
        f.errors.push_back(str(w.loc) + ": error: " + w.tensor + " holds " + std::to_string(bad) + " NaN or Inf values of " +
                           std::to_string(t->numel()) + " (the checkpoint is damaged or diverged)");
      Dims want = concretize(g->values[w.value].type.shape, 0);
      if (t->shape != want)
        f.errors.push_back(str(w.loc) + ": error: " + w.tensor + " is " + dims_str(t->shape) +
                           " in the checkpoint, the template declares " + dims_str(want) + " for this config");
    }
  std::vector<size_t> explained(unread.size(), 0);
  for (const auto& name : unread_tensors(graphs, ckpt)) {
    size_t k = 0;
    while (k < unread.size() && !dsl::unread_matches(unread[k], name)) ++k;
    if (k < unread.size()) ++explained[k];
    else f.warnings.push_back(ckpt.dir + ": warning: checkpoint tensor " + name + " is read by nothing");
  }
  for (size_t k = 0; k < unread.size(); ++k)
    if (explained[k])
      f.notes.push_back(ckpt.dir + ": note: " + std::to_string(explained[k]) + " tensors under " +
                        dsl::path_str(unread[k].pattern) + " are read by nothing: " + unread[k].reason);
  std::set<std::string> seen;
  for (const Graph* g : graphs) check_norms(*g, ckpt, seen, f);
  return f;
}

Result<std::vector<dsl::UnreadDecl>> apply_family_view(Checkpoint& ckpt, const std::string& families) {
  ARCH_TRY(Registry reg, load_registry(families_dir(families)));
  auto d = dispatch(reg, ckpt.config, [&](const std::string& n) { return ckpt.has(n); });
  if (!d.ok()) return std::vector<dsl::UnreadDecl>{};  // no family: the checkpoint is taken as it is
  ARCH_TRY_STATUS(apply_views(ckpt, *d));
  std::vector<dsl::UnreadDecl> notes;
  for (const auto& note : d->unread) notes.push_back(unread_decl(note));
  return notes;
}

}  // namespace arch

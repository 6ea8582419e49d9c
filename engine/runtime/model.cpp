#include "engine/runtime/model.h"

#include <filesystem>
#include <algorithm>
#include <optional>

#include "dsl/parse.h"
#include "kernels/kernels.h"
#include "engine/runtime/bind.h"
#include "engine/runtime/dispatch.h"
#include "engine/runtime/graph_outputs.h"
#include "engine/runtime/graph_parts.h"
#include "engine/runtime/load_progress.h"
#include "engine/runtime/unread.h"

namespace arch {

int64_t Model::config_int(const std::string& name, int64_t fallback) const {
  for (auto& [n, v] : instance.config)
    if (n == name && v.kind == dsl::Val::Int) return v.i;
  return fallback;
}

std::vector<std::string> Model::graph_names() const {
  std::vector<std::string> names;
  for (const auto& g : graphs) names.push_back(g->name());
  return names;
}

Result<const ModelGraph*> Model::find_graph(const std::string& name) const {
  if (name.empty()) return &main();
  for (const auto& g : graphs)
    if (g->name() == name) return g.get();
  std::string have;
  for (const auto& n : graph_names()) have += (have.empty() ? "" : ", ") + n;
  return error(template_path + ": the template has no graph '" + name + "' (it has: " + have + ")");
}

const ModelGraph* Model::token_graph() const {
  for (const auto& g : graphs)
    if (g->graph.find_input("tokens") >= 0) return g.get();
  return nullptr;
}

const ModelGraph* Model::producer_of(const std::string& name) const {
  for (const auto& g : graphs) {
    auto outs = output_names(g->graph);
    if (std::find(outs.begin(), outs.end(), name) != outs.end()) return g.get();
  }
  return nullptr;
}

bool Model::is_encoder_decoder() const {
  const ModelGraph* t = token_graph();
  if (!t) return false;
  for (int v : t->graph.held_inputs) {
    const ModelGraph* p = producer_of(t->graph.values[v].name);
    if (p && p != t && !t->graph.may_be_absent(v)) return true;
  }
  return false;
}

std::vector<std::string> Model::optional_state() const {
  std::vector<std::string> out;
  const ModelGraph* t = token_graph();
  if (!t) return out;
  for (int v : t->graph.held_inputs) {
    const ModelGraph* p = producer_of(t->graph.values[v].name);
    if (p && p != t && t->graph.may_be_absent(v)) out.push_back(t->graph.values[v].name);
  }
  return out;
}

namespace {

// The program of one graph, and its last-position shortcut where there is one.
Status make_programs(ModelGraph& mg, std::vector<Tensor> weights, const LoadOptions& opt, PreparedWeights& prepared) {
  ARCH_TRY(mg.program, make_program(mg.graph, op_table(), std::move(weights), opt.backend, opt.plan, opt.kernels,
                                    &prepared));
  for (const Step& s : mg.program.steps) mg.has_kv_cache = mg.has_kv_cache || s.def->stateful;
  for (const Node& n : mg.graph.nodes)
    if (const OpDef* def = op_table().find(n.op); def && def->history_changes_past)
      if (int64_t at = def->history_changes_past(n.attrs); at > 0) mg.history_changes_past.push_back(at);
  std::sort(mg.history_changes_past.begin(), mg.history_changes_past.end());
  mg.history_changes_past.erase(std::unique(mg.history_changes_past.begin(), mg.history_changes_past.end()),
                                mg.history_changes_past.end());
  std::vector<int> origin;
  if (auto g = last_row_graph(*mg.program.graph, mg.program.weights, "logits", origin)) {
    // Only a shortcut: where it cannot be built, generation runs the full program.
    auto last = make_program(*g, op_table(), mg.program.weights, opt.backend, false, opt.kernels, &prepared);
    if (last.ok()) {
      mg.last_logits = std::move(last).value();
      mg.last_logits.owned_graph = g;
      mg.last_logits.plan = mg.program.plan;
      const int base = int(mg.program.graph->nodes.size());
      for (size_t n = 0; n < origin.size(); ++n)
        mg.last_logits.steps[n].state_slot =
            origin[n] >= 0 ? mg.program.steps[size_t(origin[n])].state_slot : base + int(n);
    }
  }
  return {};
}

}  // namespace

Result<std::shared_ptr<Model>> load_model(const std::string& dir, const LoadOptions& opt) {
  auto m = std::make_shared<Model>();
  ARCH_TRY(m->checkpoint, load_checkpoint(dir, (std::filesystem::path(families_dir(opt.families)) / "gguf").string()));
  if (opt.inspect) opt.inspect(m->checkpoint);
  auto has = [&](const std::string& name) { return m->checkpoint.has(name); };
  std::optional<Registry> reg;  // also what counts as a generic config field
  bool by_signature = false;
  std::vector<UnreadNote> wrapper_unread;  // a wrapper's own tensors (an image tower), the registry's
  if (!opt.template_path.empty()) {
    m->template_path = opt.template_path;
    m->reason = "template given on the command line";
    if (auto r = load_registry(families_dir(opt.families)); r.ok()) reg = std::move(r).value();
  } else {
    ARCH_TRY(reg, load_registry(families_dir(opt.families)));
    DispatchResult d;
    if (!opt.force_family.empty()) {
      ARCH_TRY(d, dispatch_forced(*reg, opt.force_family));
    } else {
      ARCH_TRY(d, dispatch(*reg, m->checkpoint.config, has));
    }
    by_signature = d.by_signature;
    wrapper_unread = d.unread;
    m->family = d.family->name;
    m->template_path = d.family->template_path;
    m->reason = d.reason;
    ARCH_TRY_STATUS(apply_views(m->checkpoint, d));
  }
  ARCH_TRY(m->tmpl, dsl::parse_template_file(m->template_path));
  if (m->family.empty()) m->family = m->tmpl.family;
  std::vector<std::string> declared;
  for (const auto& f : m->tmpl.config) declared.push_back(f.name);
  for (const auto& ns : m->tmpl.spaces) declared.push_back(ns.config_field);  // read by the namespace's template
  m->unread_config = unread_config_fields(m->checkpoint.config, declared, reg ? &*reg : nullptr);
  std::string unread;
  for (const auto& f : m->unread_config) unread += (unread.empty() ? "" : ", ") + f;
  const std::string model_type = model_type_of(m->checkpoint.config);
  // Tensors alone chose the family: what the family leaves unread (config
  // fields, tensors) is the tell of another architecture whose tensors
  // happen to fit, and would run wrong.
  auto another_architecture = [&](const std::string& left) {
    return error(dir + ": model_type '" + model_type + "' is not listed in " + reg->path + "; its tensors fit " +
                 m->family + "'s signature, but " + left + ". It is likely another architecture; --force-family " +
                 m->family + " runs it anyway");
  };
  if (by_signature && !m->unread_config.empty())
    return another_architecture("its config has fields " + m->family + " does not read: " + unread);
  if (!opt.force_family.empty())
    m->warnings.push_back("--force-family " + opt.force_family + ": model_type '" + model_type + "' runs on " +
                          m->family + " (" + m->template_path + ") as asked" +
                          (unread.empty() ? "" : "; config fields it does not read: " + unread));
  // Tensors alone chose the family: whatever fails from here on may fail
  // because the checkpoint is another architecture's.
  auto chosen_by_tensors = [&](Error e) {
    if (by_signature)
      e.message += "\n(model_type '" + model_type + "' is not listed in " + reg->path + "; its tensors alone chose " +
                   m->family + ": the checkpoint may be another architecture's)";
    return e;
  };
  m->kernel_options = opt.kernels;
  dsl::InstantiateOptions io;
  io.config = m->checkpoint.config;
  io.tensor_exists = has;
  io.tensor_shape = [&](const std::string& name) { return m->checkpoint.shape_of(name); };
  io.flag_overrides = opt.flags;
  std::vector<Graph> as_instantiated;  // before the rewrite, where there is one
  for (const auto& gd : m->tmpl.graphs) {
    io.graph = gd.name;
    auto instantiated = dsl::instantiate(m->tmpl, io, op_table());
    if (!instantiated.ok()) return chosen_by_tensors(instantiated.error());
    dsl::Instance inst = std::move(instantiated).value();
    auto mg = std::make_unique<ModelGraph>();
    mg->graph = std::move(inst.graph);
    if (opt.rewrite) {
      as_instantiated.push_back(mg->graph);
      ARCH_TRY(mg->graph, opt.rewrite(mg->graph, m->template_path));
    }
    if (m->graphs.empty()) {
      m->instance = std::move(inst);
      m->instance.graph = Graph{};
    }
    m->graphs.push_back(std::move(mg));
  }
  if (m->graphs.empty()) return error(m->template_path + ": the template defines no graph");
  // Read by the graphs as instantiated: a rewrite that leaves a tensor to
  // another process (a split over several) does not make it unread.
  std::vector<const Graph*> graphs;
  for (const auto& g : as_instantiated) graphs.push_back(&g);
  for (const auto& mg : m->graphs)
    if (as_instantiated.empty()) graphs.push_back(&mg->graph);
  m->unused_tensors = unread_tensors(graphs, m->checkpoint);
  m->unread_declared = dsl::all_unread(m->tmpl);
  for (const auto& note : wrapper_unread) m->unread_declared.push_back(unread_decl(note));
  m->unexplained_tensors = unexplained_tensors(m->unused_tensors, m->unread_declared);
  if (!m->unexplained_tensors.empty()) {
    const size_t n = m->unexplained_tensors.size();
    const std::string which = std::to_string(n) + (n == 1 ? " checkpoint tensor" : " checkpoint tensors");
    const std::string listed = summarize_tensors(m->unexplained_tensors);
    // Chosen by its tensors alone, a checkpoint with more than the template
    // reads is another architecture whose tensor names happen to fit.
    if (by_signature)
      return another_architecture(m->family + " (" + m->template_path + ") leaves " + which + " unread: " + listed);
    if (opt.strict)
      return error(dir + ": " + which + (n == 1 ? " is" : " are") + " read by no graph of " + m->template_path +
                   ": " + listed + " (--strict: a template must read every tensor but those its `unread` "
                   "declarations explain)");
    m->warnings.push_back(which + (n == 1 ? " is" : " are") + " read by no graph of " + m->template_path + ": " +
                          listed + "; a template that leaves a tensor out may compute something else (--strict "
                          "refuses)");
  }
  if (!opt.programs) return m;
  int64_t total_bytes = 0;
  for (const auto& [name, t] : m->checkpoint.tensors) total_bytes += int64_t(t.nbytes());
  LoadProgressScope progress(opt.progress, total_bytes);
  // Every graph binds its weights by name from the one checkpoint; what the
  // programs prepare from them (widened, tiled) is made once for all.
  PreparedWeights prepared;
  for (auto& mg : m->graphs) {
    auto weights = bind_weights(mg->graph, m->checkpoint);
    if (!weights.ok()) return chosen_by_tensors(weights.error());
    ARCH_TRY_STATUS(make_programs(*mg, std::move(weights).value(), opt, prepared));
    Graph front, back;
    if (!cut_at_wait(mg->graph, op_table(), front, back)) continue;
    for (auto [part, graph] : {std::pair{&mg->front, &front}, std::pair{&mg->back, &back}}) {
      *part = std::make_unique<ModelGraph>();
      (*part)->graph = std::move(*graph);
      ARCH_TRY(auto w, bind_weights((*part)->graph, m->checkpoint));
      ARCH_TRY_STATUS(make_programs(**part, std::move(w), opt, prepared));
    }
  }
  weights_read(total_bytes);  // the rest is mapped, read when first used
  return m;
}

}  // namespace arch

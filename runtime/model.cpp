#include "runtime/model.h"

#include "dsl/parse.h"
#include "runtime/bind.h"
#include "runtime/dispatch.h"
#include "runtime/load_progress.h"
#include "kernels/kernels.h"

namespace arch {

int64_t Model::config_int(const std::string& name, int64_t fallback) const {
  for (auto& [n, v] : instance.config)
    if (n == name && v.kind == dsl::Val::Int) return v.i;
  return fallback;
}

Result<std::shared_ptr<Model>> load_model(const std::string& dir, const LoadOptions& opt) {
  auto m = std::make_shared<Model>();
  ARCH_TRY(m->checkpoint, load_checkpoint(dir));
  auto has = [&](const std::string& name) { return m->checkpoint.has(name); };
  if (!opt.template_path.empty()) {
    m->template_path = opt.template_path;
    m->reason = "template given on the command line";
  } else {
    ARCH_TRY(Registry reg, load_registry(families_dir(opt.families)));
    ARCH_TRY(DispatchResult d, dispatch(reg, m->checkpoint.config, has));
    m->family = d.family->name;
    m->template_path = d.family->template_path;
    m->reason = d.reason;
    if (d.unwrap) ARCH_TRY_STATUS(unwrap(m->checkpoint, *d.unwrap));
    if (!d.family->tensor_names.prefixes.empty()) ARCH_TRY_STATUS(unwrap(m->checkpoint, d.family->tensor_names));
  }
  ARCH_TRY(m->tmpl, dsl::parse_template_file(m->template_path));
  if (m->family.empty()) m->family = m->tmpl.family;
  dsl::InstantiateOptions io;
  io.config = m->checkpoint.config;
  io.tensor_exists = has;
  io.flag_overrides = opt.flags;
  ARCH_TRY(m->instance, dsl::instantiate(m->tmpl, io, op_table()));
  int64_t total_bytes = 0;
  for (const auto& [name, t] : m->checkpoint.tensors) total_bytes += int64_t(t.nbytes());
  LoadProgressScope progress(opt.progress, total_bytes);
  ARCH_TRY(BoundWeights w, bind_weights(m->instance.graph, m->checkpoint));
  m->unused_tensors = std::move(w.unused);
  ARCH_TRY(m->program, make_program(m->instance.graph, op_table(), std::move(w.by_value), opt.backend, opt.plan));
  std::vector<int> origin;
  if (auto g = last_row_graph(*m->program.graph, m->program.weights, "logits", origin)) {
    // Only a shortcut: where it cannot be built, generation runs the full program.
    auto last = make_program(*g, op_table(), m->program.weights, opt.backend, false);
    if (last.ok()) {
      m->last_logits = std::move(last).value();
      m->last_logits.owned_graph = g;
      m->last_logits.plan = m->program.plan;
      const int base = int(m->program.graph->nodes.size());
      for (size_t n = 0; n < origin.size(); ++n)
        m->last_logits.state_of[n] = origin[n] >= 0 ? m->program.state_of[size_t(origin[n])] : base + int(n);
    }
  }
  weights_read(total_bytes);  // the rest is mapped, read when first used
  return m;
}

}  // namespace arch

#include "tools/toolkit/npu2_lowering.h"

#include "engine/npu2/numerics.h"

namespace arch {

Result<npu2::Lowering> lower_graph(const Graph& step, const std::string& template_path, const std::string& family,
                                   int64_t config_max_positions, const Npu2Options& opt) {
  npu2::LowerOptions lo;
  lo.max_context = opt.max_context > 0 ? opt.max_context
                                       : (config_max_positions > 0 ? std::min<int64_t>(config_max_positions, 4096) : 2048);
  lo.chunk = opt.chunk;
  lo.family = family;
  lo.template_file = template_path;
  if (!opt.profile.empty()) {
    ARCH_TRY(lo.profile, npu2::read_profile(opt.profile));
  } else {
    ARCH_TRY(lo.profile, npu2::profile_for_template(template_path));
  }
  return npu2::lower(step, lo);
}

Result<npu2::Lowering> lower_model(const Model& m, const Npu2Options& opt) {
  const ModelGraph* g = m.token_graph();
  if (!g) {
    // No token graph (an encoder): lowered anyway, so the refusal names why.
    g = &m.main();
  }
  std::string tmpl = m.template_path;
  return lower_graph(g->graph, tmpl, m.family, m.config_int("max_position_embeddings", 0), opt);
}

GraphRewrite npu2_numerics_rewrite(const std::string& model, const Npu2Options& opt) {
  return [model, opt](const Graph& g, const std::string& template_path) -> Result<Graph> {
    ARCH_TRY(npu2::Lowering l, lower_graph(g, template_path, g.family, 0, opt));
    if (!l.refusals.empty()) return error(refusal_message(model, l));
    return npu2::apply_numerics(g, l.program);
  };
}

std::string refusal_message(const std::string& model, const npu2::Lowering& l) {
  return model + ": the NPU2 engine has no unit for " + std::to_string(l.refusals.size()) +
         (l.refusals.size() == 1 ? " thing" : " things") + " this step graph does:\n" + npu2::refusal_table(l.refusals);
}

}  // namespace arch

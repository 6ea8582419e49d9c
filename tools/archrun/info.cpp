// archrun info: which family a checkpoint dispatches to and why; config; flags.
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>

#include "engine/runtime/dispatch.h"
#include "engine/runtime/forward.h"
#include "importer/checkpoint/gguf_checkpoint.h"
#include "importer/checkpoint/gguf_side_files.h"
#include "engine/runtime/pipeline.h"
#include "engine/runtime/kv_footprint.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// A pipeline folder: each component, as any checkpoint's info names it.
int pipeline_info(const Common& c, bool as_json) {
  LoadOptions lo;
  lo.programs = false;
  lo.strict = c.strict;
  auto p = load_pipeline(c.model, lo);
  if (!p.ok()) return fail(p.error());
  nlohmann::json j;
  j["pipeline"] = c.model;
  j["class"] = p->index.value("_class_name", std::string());
  j["scheduler"] = p->scheduler_path;
  for (const auto& [name, m] : pipeline_components(*p)) {
    nlohmann::json cj = {{"family", m->family}, {"template", m->template_path}, {"reason", m->reason},
                         {"tensors", m->checkpoint.tensors.size()}, {"graphs", m->graph_names()}};
    j["components"][name] = cj;
  }
  if (as_json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("pipeline: %s (%s)\nscheduler: %s\n", c.model.c_str(), j["class"].get<std::string>().c_str(),
              p->scheduler_path.c_str());
  for (const auto& [name, m] : pipeline_components(*p)) {
    std::string graphs;
    for (const auto& g : m->graph_names()) graphs += (graphs.empty() ? "" : ", ") + g;
    std::printf("  %-15s %s (%s; graphs %s, %zu tensors): %s\n", name.c_str(), m->family.c_str(), m->template_path.c_str(),
                graphs.c_str(), m->checkpoint.tensors.size(), m->reason.c_str());
  }
  return 0;
}

}  // namespace

int run_info(const Common& c, bool as_json) {
  if (is_pipeline(c.model)) return pipeline_info(c, as_json);
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  const Model& model = **m;
  nlohmann::json j;
  j["model"] = model.checkpoint.dir;
  j["family"] = model.family;
  j["template"] = model.template_path;
  j["reason"] = model.reason;
  for (auto& [n, v] : model.instance.config) j["config"][n] = v.to_json();
  for (auto& [n, v] : model.instance.flags) j["flags"][n] = v;
  j["tensors"] = model.checkpoint.tensors.size();
  j["weights_bound"] = model.graph().weights.size();
  j["unused_tensors"] = model.unused_tensors;
  // What the template (or the registry, of a wrapper's own tensors) says
  // of them, grouped.
  std::vector<std::pair<const dsl::UnreadDecl*, std::vector<std::string>>> groups;
  const std::vector<std::string>& unexplained = model.unexplained_tensors;
  for (const auto& u : model.unused_tensors) {
    const dsl::UnreadDecl* why = nullptr;
    for (const auto& d : model.unread_declared)
      if (dsl::unread_matches(d, u)) {
        why = &d;
        break;
      }
    if (!why) continue;  // among the unexplained
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == why; });
    if (it == groups.end()) groups.push_back({why, {u}});
    else it->second.push_back(u);
  }
  auto pattern_of = [](const dsl::UnreadDecl& d) {
    std::string p;
    for (const auto& s : d.pattern)
      p += (p.empty() ? "" : ".") + (s.kind == dsl::PathSeg::Name    ? s.name
                                     : s.kind == dsl::PathSeg::Index ? std::to_string(s.index)
                                     : s.kind == dsl::PathSeg::Any   ? std::string("*")
                                                                     : "{" + s.name + "}");
    return p + ".*";
  };
  for (const auto& [d, names] : groups)
    j["unused_groups"].push_back({{"pattern", pattern_of(*d)}, {"reason", d->reason}, {"tensors", names.size()}});
  j["unread_config"] = model.unread_config;
  j["ops"] = model.graph().nodes.size();
  j["outputs"] = output_names(model.graph());
  for (const auto& mg : model.graphs) {
    nlohmann::json gj;
    gj["name"] = mg->name();
    for (int v : mg->graph.inputs) gj["inputs"].push_back(input_decl(mg->graph, v));
    gj["outputs"] = output_names(mg->graph);
    gj["ops"] = mg->graph.nodes.size();
    gj["kv_cache"] = mg->has_kv_cache;
    gj["kv_bytes_per_position"] = kv_bytes_per_position(mg->program);
    gj["state_bytes"] = state_bytes_per_sequence(mg->program);
    j["graphs"].push_back(gj);
  }
  std::optional<nlohmann::json> gguf;
  if (is_gguf_path(model.checkpoint.dir)) {
    auto g = gguf_summary(model.checkpoint.dir, (std::filesystem::path(families_dir(c.families)) / "gguf").string());
    if (!g.ok()) return fail(g.error());
    gguf = *g;
    j["gguf"] = *gguf;
  }
  if (as_json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model:    %s\nfamily:   %s\ntemplate: %s\nwhy:      %s\n", model.checkpoint.dir.c_str(),
              model.family.c_str(), model.template_path.c_str(), model.reason.c_str());
  if (gguf) {
    std::string types;
    for (const auto& [t, n] : (*gguf)["types"].items()) types += (types.empty() ? "" : ", ") + std::to_string(n.template get<int>()) + " " + t;
    int unmapped = 0, changed = 0;
    for (const auto& t : (*gguf)["tensors"]) {
      unmapped += t.contains("unmapped");
      changed += t.contains("rows") || t.contains("values") || t.contains("transposed");
    }
    std::printf("format:   GGUF v%d, architecture '%s' read through %s\n", (*gguf)["version"].get<int>(),
                (*gguf)["architecture"].get<std::string>().c_str(), (*gguf)["name_map"].get<std::string>().c_str());
    std::printf("          tensors: %s; %zu renamed, %d changed back at load (rows, values, transposes), %d unmapped "
                "(--json lists each)\n",
                types.c_str(), (*gguf)["tensors"].size() - size_t(unmapped), changed, unmapped);
  }
  std::printf("config:\n");
  for (auto& [n, v] : model.instance.config) std::printf("  %-26s %s\n", n.c_str(), v.to_json().dump().c_str());
  std::printf("flags:\n");
  for (auto& [n, v] : model.instance.flags) std::printf("  %-26s %s\n", n.c_str(), v ? "true" : "false");
  std::printf("weights:  %zu of the checkpoint's %zu tensors read by the graphs\n",
              model.checkpoint.tensors.size() - model.unused_tensors.size(), model.checkpoint.tensors.size());
  for (const auto& mg : model.graphs) {
    std::string ins, outs;
    for (int v : mg->graph.inputs) ins += (ins.empty() ? "" : ", ") + input_decl(mg->graph, v);
    for (const auto& o : output_names(mg->graph)) outs += (outs.empty() ? "" : ", ") + o;
    std::string state;
    if (const int64_t kv = kv_bytes_per_position(mg->program); kv > 0)
      state += ", KV cache " + std::to_string(kv) + " bytes a position";
    if (const int64_t fixed = state_bytes_per_sequence(mg->program); fixed > 0)
      state += ", recurrent state " + std::to_string(fixed) + " bytes at any position";
    std::printf("  graph %s(%s) -> %s: %zu ops%s\n", mg->name().c_str(), ins.c_str(), outs.c_str(),
                mg->graph.nodes.size(), state.c_str());
  }
  for (const auto& [d, names] : groups)
    std::printf("  unused:  %s (%zu tensors): %s\n", pattern_of(*d).c_str(), names.size(), d->reason.c_str());
  for (auto& u : unexplained) std::printf("  unused:  %s\n", u.c_str());
  std::string unread;
  for (const auto& f : model.unread_config) unread += (unread.empty() ? "" : ", ") + f;
  std::printf("config fields the template leaves unread: %s\n", unread.empty() ? "none" : unread.c_str());
  return 0;
}

}  // namespace arch::cli

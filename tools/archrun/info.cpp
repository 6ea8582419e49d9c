// archrun info: which family a checkpoint dispatches to and why; config; flags.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "runtime/forward.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_info(const Common& c, bool as_json) {
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
  j["ops"] = model.graph().nodes.size();
  j["outputs"] = output_names(model.graph());
  if (as_json) {
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("model:    %s\nfamily:   %s\ntemplate: %s\nwhy:      %s\n", model.checkpoint.dir.c_str(),
              model.family.c_str(), model.template_path.c_str(), model.reason.c_str());
  std::printf("config:\n");
  for (auto& [n, v] : model.instance.config) std::printf("  %-26s %s\n", n.c_str(), v.to_json().dump().c_str());
  std::printf("flags:\n");
  for (auto& [n, v] : model.instance.flags) std::printf("  %-26s %s\n", n.c_str(), v ? "true" : "false");
  std::printf("graph:    %zu ops, %zu weights bound of %zu tensors in the checkpoint\n",
              model.graph().nodes.size(), model.graph().weights.size(), model.checkpoint.tensors.size());
  for (auto& u : model.unused_tensors) std::printf("  unused:  %s\n", u.c_str());
  return 0;
}

}  // namespace arch::cli

// archrun compare: a model against a golden directory, per tensor and layer.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tools/toolkit/compare.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_compare(const Common& c, const std::string& golden, bool as_json) {
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  auto r = compare_with_golden(**m, golden);
  if (!r.ok()) return fail(r.error());
  const TensorDiff* first = r->first_failure();
  size_t agree = 0;
  while (agree < r->want_tokens.size() && agree < r->got_tokens.size() &&
         r->want_tokens[agree] == r->got_tokens[agree])
    ++agree;
  if (as_json) {
    nlohmann::json j;
    for (const auto& t : r->tensors)
      j["tensors"].push_back({{"name", t.name}, {"max_abs", t.max_abs}, {"ref_max", t.ref_max},
                              {"bound", t.bound}, {"ok", t.ok()}});
    j["missing"] = r->missing;
    j["not_computed"] = r->not_computed;
    j["first_failure"] = first ? nlohmann::json(first->name) : nlohmann::json(nullptr);
    if (!r->want_tokens.empty()) {
      j["greedy_tokens"] = r->want_tokens.size();
      j["greedy_tokens_agree"] = agree;
    }
    j["ok"] = r->ok();
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%-32s %12s %12s  %s\n", "tensor", "max abs err", "allowed", "");
    for (const auto& t : r->tensors)
      std::printf("%-32s %12.3g %12.3g  %s\n", t.name.c_str(), t.max_abs, t.bound, t.ok() ? "ok" : "DIFFERS");
    for (const auto& n : r->missing) std::printf("%-32s %12s %12s  MISSING (the model has no such output)\n", n.c_str(), "-", "-");
    for (const auto& n : r->not_computed)
      std::printf("%-32s %12s %12s  not computed (the model reads its tower no further)\n", n.c_str(), "-", "-");
    if (!r->want_tokens.empty())
      std::printf("greedy tokens: %zu of %zu agree\n", agree, r->want_tokens.size());
    if (first) std::printf("first divergence: %s (max abs err %.3g > %.3g)\n", first->name.c_str(), first->max_abs, first->bound);
    std::printf("%s\n", r->ok() ? "matches the golden" : "does NOT match the golden");
  }
  return r->ok() ? 0 : 1;
}

}  // namespace arch::cli

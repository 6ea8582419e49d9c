// Per-op time (--profile of bench and bench-serve): as JSON and as lines.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tools/archrun/commands.h"

namespace arch::cli {

nlohmann::json profile_json(const OpProfile& p) {
  std::vector<std::pair<std::string, OpProfile::Entry>> ops(p.by_op.begin(), p.by_op.end());
  std::sort(ops.begin(), ops.end(), [](auto& a, auto& b) { return a.second.seconds > b.second.seconds; });
  nlohmann::json j = nlohmann::json::array();
  for (auto& [op, e] : ops) j.push_back({{"op", op}, {"ms", 1000 * e.seconds}, {"calls", e.calls}});
  return j;
}

void print_profile(const char* phase, const nlohmann::json& ops) {
  double total = 0;
  for (auto& o : ops) total += o["ms"].get<double>();
  std::printf("  %s: %.1f ms in kernels\n", phase, total);
  for (auto& o : ops)
    std::printf("    %-16s %10.2f ms %5.1f%% %8lld calls\n", o["op"].get<std::string>().c_str(), o["ms"].get<double>(),
                total > 0 ? 100 * o["ms"].get<double>() / total : 0.0, (long long)o["calls"].get<int64_t>());
}

}  // namespace arch::cli

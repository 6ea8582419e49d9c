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

nlohmann::json profile_blocks_json(const OpProfile& p) {
  std::vector<std::pair<std::string, OpProfile::Entry>> blocks(p.by_block.begin(), p.by_block.end());
  std::sort(blocks.begin(), blocks.end(), [](auto& a, auto& b) { return a.second.seconds > b.second.seconds; });
  nlohmann::json j = nlohmann::json::array();
  for (auto& [block, e] : blocks) j.push_back({{"block", block}, {"ms", 1000 * e.seconds}, {"kernel_calls", e.calls}});
  return j;
}

void print_profile_blocks(const char* phase, const nlohmann::json& blocks) {
  if (blocks.empty()) return;
  std::printf("  %s by the block of a layer each kernel's value was made in:\n", phase);
  for (auto& b : blocks)
    std::printf("    %-16s %10.2f ms %8lld kernel calls\n", b["block"].get<std::string>().c_str(), b["ms"].get<double>(),
                (long long)b["kernel_calls"].get<int64_t>());
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

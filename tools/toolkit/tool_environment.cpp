#include "tools/toolkit/tool_environment.h"

#include <cstdlib>
#include <sstream>

#include "engine/core/limits.h"

namespace arch {

namespace {

// libgomp reads OMP_NUM_THREADS itself and would try to start that many
// threads at the first parallel region (100000: SIGSEGV).
Status check_omp_num_threads() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (!env) return {};
  std::stringstream ss(env);
  std::string item;
  bool any = false;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > kMostThreads)
      return error("OMP_NUM_THREADS=" + std::string(env) + ": expected a thread count from 1 to " +
                   std::to_string(kMostThreads) + " (or unset it, or use --threads)");
    any = true;
  }
  if (!any) return error("OMP_NUM_THREADS is set but empty: unset it or give a thread count");
  return {};
}

}  // namespace

Status prepare_tool_environment(const std::vector<std::string>& limits) {
  ARCH_TRY_STATUS(check_omp_num_threads());
  ARCH_TRY_STATUS(limits_environment());
  for (const auto& l : limits)
    if (auto st = set_limits(l); !st) return error("--limit " + l + ": " + st.error().message);
  return {};
}

std::string limits_help() {
  std::string s = "Limits on what input files may ask for (--limit NAME=N, or ARCHETYPE_LIMITS=NAME=N,NAME=N):\n";
  for (const auto& l : all_limits()) s += "  " + l.name + " = " + std::to_string(l.standard) + ": " + l.what + "\n";
  return s;
}

}  // namespace arch

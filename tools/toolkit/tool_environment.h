// What every tool checks before it does any work: the environment a user
// set (OMP_NUM_THREADS, ARCHETYPE_LIMITS) and the limits given with
// --limit. A wrong value is one clear error at the tool boundary, before a
// thread pool of 100,000 threads or a limit silently left at its default.
#pragma once

#include <string>
#include <vector>

#include "engine/core/error.h"

namespace arch {

// Threads a process may ask OpenMP for, as --threads caps them.
inline constexpr int kMostThreads = 1024;

// OMP_NUM_THREADS (a number 1..kMostThreads, or a comma list of them) and
// ARCHETYPE_LIMITS, then each --limit NAME=VALUE in order.
Status prepare_tool_environment(const std::vector<std::string>& limits);

// "Limits (--limit NAME=N, ARCHETYPE_LIMITS=NAME=N,...):" and a line each,
// for a tool's --help footer.
std::string limits_help();

}  // namespace arch

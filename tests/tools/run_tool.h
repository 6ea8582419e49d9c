// Running the built tools as a user would, capturing their output.
#pragma once

#include <cstdio>
#include <string>

namespace arch::testing {

struct ToolRun {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

inline ToolRun run_tool(const std::string& command) {
  ToolRun r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The last line of a tool's output (where --json puts its one object).
inline std::string last_line(const std::string& out) {
  size_t end = out.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  size_t start = out.rfind('\n', end);
  return out.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start == std::string::npos ? 0 : start + 1));
}

inline std::string archrun() { return ARCHRUN_PATH; }
inline std::string archc() { return ARCHC_PATH; }

}  // namespace arch::testing

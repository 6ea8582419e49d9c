// archrun import DIR -o OUT --dtype bf16|q8|q4|f32|stored: writes the
// canonical model (importer/checkpoint/canonical.h), showing progress per tensor on
// stderr; --json prints a summary object as the last line.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/canonical.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_import(const std::string& dir, const std::string& out, const std::string& dtype, bool as_json) {
  auto type = import_type_from_name(dtype);
  if (!type) return fail(error("unknown --dtype '" + dtype + "': give bf16, q8, q4, f32 or stored"));
  const bool tty = isatty(2);
  auto started = std::chrono::steady_clock::now();
  auto progress = [&](int64_t done, int64_t total, const std::string& name) {
    show_progress_count("import", done, total, name);
    if (!tty && done == total) std::fprintf(stderr, "import: %lld tensors written\n", (long long)total);
  };
  auto r = import_checkpoint(dir, out, *type, progress);
  if (tty) std::fprintf(stderr, "\n");
  if (!r.ok()) return fail(r.error());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (const auto& w : r->non_finite)
    std::fprintf(stderr, "archrun: warning: %s: tensor %s (the checkpoint is damaged or diverged: what it computes is not numbers)\n",
                 dir.c_str(), w.c_str());
  nlohmann::json j = {{"path", r->path},       {"dtype", dtype},
                      {"tensors", r->tensors}, {"quantized", r->quantized},
                      {"converted", r->converted}, {"bytes_in", r->bytes_in},
                      {"bytes_out", r->bytes_out}, {"seconds", seconds}, {"non_finite", r->non_finite}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("wrote %s: %lld tensors (%lld quantized, %lld converted), %.1f MB -> %.1f MB in %.1f s\n",
                r->path.c_str(), (long long)r->tensors, (long long)r->quantized, (long long)r->converted,
                double(r->bytes_in) / 1e6, double(r->bytes_out) / 1e6, seconds);
  }
  return 0;
}

}  // namespace arch::cli

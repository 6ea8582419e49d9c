// What every archrun command shares: opening a model or tokenizer, ids, errors.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>

#include <unistd.h>

#include "engine/core/finite.h"
#include "engine/distributed/split_model.h"
#include "engine/runtime/dispatch.h"
#include "engine/runtime/model_text.h"
#include "engine/runtime/thread_governor.h"
#include "importer/checkpoint/safetensors.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "tools/archrun/commands.h"

#include <omp.h>

namespace fs = std::filesystem;

namespace arch::cli {

namespace {

// A line on a terminal's stderr while a load runs past half a second:
// how much of the weights has been read and rewritten; cleared when done.
LoadProgress load_progress_line() {
  if (!isatty(2)) return nullptr;
  using clock = std::chrono::steady_clock;
  struct Shown {
    clock::time_point started = clock::now(), last;
    bool any = false;
  };
  auto shown = std::make_shared<Shown>();
  return [shown](int64_t read, int64_t total) {
    const auto now = clock::now();
    if (read >= total) {
      if (shown->any) clear_progress_line();
      shown->any = false;
      return;
    }
    if (now - shown->started < std::chrono::milliseconds(500) || now - shown->last < std::chrono::milliseconds(100))
      return;
    shown->last = now;
    shown->any = true;
    std::fprintf(stderr, "\r\033[Kloading: %.1f of %.1f GB of weights read (%d%%)", double(read) / 1e9,
                 double(total) / 1e9, int(100 * read / std::max<int64_t>(total, 1)));
  };
}

const char kOutOfMemory[] =
    "out of memory: an allocation failed (std::bad_alloc); what was asked needs more memory than this machine "
    "has free (smaller sizes, fewer steps or shorter text need less)";

// An exception nothing caught ends the process through std::terminate: one
// thrown inside a kernel's parallel loop can be caught by no caller at all.
// std::bad_alloc is said as the one error and exit 1, never an abort; any
// other goes on to the runtime's own handler.
std::terminate_handler previous_terminate = nullptr;

[[noreturn]] void say_out_of_memory_on_terminate() {
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "archrun: error: %s\n", kOutOfMemory);
      std::_Exit(1);
    } catch (...) {
    }
  }
  if (previous_terminate) previous_terminate();
  std::abort();
}

[[maybe_unused]] const bool terminate_installed = [] {
  previous_terminate = std::set_terminate(say_out_of_memory_on_terminate);
  return true;
}();

}  // namespace

int guarded(const std::function<int()>& command) {
  try {
    return command();
  } catch (const std::bad_alloc&) {
    return fail(error(kOutOfMemory));
  }
}

// The build's own families/, not $ARCHETYPE_FAMILIES: a user's set of
// templates need not carry the model.
std::string default_model_path() { return (fs::path(built_in_families_dir()) / "default" / "stories260K.gguf").string(); }

Result<std::shared_ptr<Model>> open_model(const Common& c, GraphRewrite rewrite) {
  LoadOptions opt;
  opt.rewrite = std::move(rewrite);
  opt.programs = c.programs;
  opt.families = c.families;
  opt.template_path = c.template_path;
  opt.force_family = c.force_family;
  opt.strict = c.strict;
  opt.backend = c.path;
  opt.plan = !c.no_plan;
  opt.progress = load_progress_line();
  if (c.threads > 0) omp_set_num_threads(c.threads);
  if (!cpu_features().cap_error.empty()) return error(cpu_features().cap_error);
  opt.kernels.bf16_activations = c.bf16_activations;
  opt.kernels.kv_f16 = c.kv_f16;
  ARCH_TRY(opt.flags, dsl::parse_flag_overrides(c.flags));
  if (!c.split.empty()) {
    if (c.model == "toy") return error("--split: the toy is written per process; split a checkpoint");
    auto m = load_split_model(c.model, opt, c.split);
    if (m.ok())
      for (const auto& w : (*m)->warnings) std::fprintf(stderr, "archrun: warning: %s\n", w.c_str());
    return m;
  }
  if (c.model != "toy") {
    auto m = load_model(c.model, opt);
    if (m.ok())
      for (const auto& w : (*m)->warnings) std::fprintf(stderr, "archrun: warning: %s\n", w.c_str());
    return m;
  }
  // The random toy: written fresh (it is tiny) to a directory of this
  // process's own, loaded, and removed; the mapping outlives the files.
  fs::path dir = fs::temp_directory_path() / ("archetype-toy-" + std::to_string(getpid()));
  ARCH_TRY_STATUS(write_toy_checkpoint(dir.string(), 0));
  auto m = load_model(dir.string(), opt);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (m.ok()) (*m)->checkpoint.dir = "toy (a random-weight toy, seed 0)";
  return m;
}

Result<Pipeline> open_pipeline(const Common& c, const std::string& scheduler) {
  if (!c.split.empty())
    return error("--split " + c.split + ": a pipeline folder's models (text encoder, UNet, VAE) run in one process; "
                 "--split takes one checkpoint (a decoder)");
  LoadOptions lo;
  lo.backend = c.path;
  lo.strict = c.strict;
  ARCH_TRY(Pipeline p, load_pipeline(c.model, lo, scheduler));
  for (const auto& [name, m] : pipeline_components(p))
    for (const auto& w : m->warnings) std::fprintf(stderr, "archrun: warning: %s: %s\n", name.c_str(), w.c_str());
  return p;
}

int governed_threads(const Common& c) {
  // A thread count given is kept; otherwise decode steps' threads are
  // governed, from one per core down while other work holds a core.
  return c.threads <= 0 && !std::getenv("OMP_NUM_THREADS") ? omp_get_max_threads() : 0;
}

SessionOptions session_options(const Common& c, int64_t max_context) {
  SessionOptions s;
  s.max_context = max_context;
  s.adaptive_threads = governed_threads(c);
  return s;
}

void show_progress_count(const char* label, int64_t done, int64_t total, const std::string& name) {
  if (isatty(2)) std::fprintf(stderr, "\r\033[K%s: %lld/%lld %s", label, (long long)done, (long long)total, name.c_str());
}

void clear_progress_line() {
  if (isatty(2)) std::fprintf(stderr, "\r\033[K");
}

Result<Tensor> only_tensor(const std::string& path, const char* what) {
  ARCH_TRY(SafetensorsFile f, read_safetensors(path));
  if (f.tensors.size() != 1)
    return error(path + ": " + what + " must be one tensor, the file holds " + std::to_string(f.tensors.size()));
  const auto& [name, stored] = *f.tensors.begin();
  ARCH_TRY_STATUS(check_finite(stored, path + ": " + what + " (tensor '" + name + "')"));
  return stored.dtype == DType::F32 ? stored : to_f32(stored);
}

Result<std::string> read_text_file(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(path + ": cannot read it");
  std::string text;
  char chunk[65536];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, size_t(in.gcount()));
    if (text.size() > max_bytes) return error(path + ": larger than " + std::to_string(max_bytes) + " bytes");
  }
  return text;
}

Result<std::vector<int32_t>> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(int32_t(v));
    } catch (const std::exception&) {
      return error("--ids: '" + item + "' is not a token id (expected e.g. --ids 1,2,3)");
    }
  }
  if (ids.empty()) return error("--ids: no token ids given");
  return ids;
}

int fail(const Error& e) {
  std::fprintf(stderr, "archrun: error: %s\n", e.message.c_str());
  return 1;
}

// The checkpoint's tokenizer (MODEL may hold only tokenizer files).
Result<std::shared_ptr<const Tokenizer>> open_tokenizer(const std::string& model) {
  if (model == "toy") return error("the random-weight toy has no tokenizer: give token ids with --ids");
  return load_model_tokenizer(model);
}

void report_check(const CheckStats& s, bool failed) {
  std::fprintf(stderr, "check: %lld steps checked against their reference kernels, %lld skipped (they ran the reference kernel itself), %lld stateful steps not re-run; %d failed\n",
               (long long)s.checked, (long long)s.skipped, (long long)s.stateful, failed ? 1 : 0);
}

}  // namespace arch::cli

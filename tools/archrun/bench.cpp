// archrun bench: how fast a model loads, reads a prompt and decodes, on
// seeded random token ids; --json prints one object as the last line.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/sampler.h"
#include "engine/session.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// Peak resident memory of this process, from the kernel's accounting.
double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;  // kB
  return 0;
}

// Per-op seconds, largest first, as a share of the phase.
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

}  // namespace

int run_bench(const Common& c, int prompt_tokens, int new_tokens, bool as_json, bool profile, int repeat) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  auto t0 = clock::now();
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  auto t1 = clock::now();
  int64_t vocab = (*m)->config_int("vocab_size", 0);
  if (vocab <= 0) return fail(error("bench needs a model with a vocab_size (a decoder)"));
  std::mt19937 rng(1234);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  for (auto& id : prompt) id = int32_t(rng() % uint32_t(vocab));
  OpProfile prompt_profile, decode_profile;
  struct Run {
    double ttft_s, decode_s;
  };
  // One prompt and its decode through a fresh session (fresh KV caches).
  auto run_once = [&]() -> Result<Run> {
    auto started = clock::now();
    Session s(**m, prompt_tokens + new_tokens);
    if (profile) s.profile_with(&prompt_profile);
    ARCH_TRY(auto out, s.step(prompt, {"logits"}, /*last_only=*/true));
    const Tensor& logits = out.at("logits");
    int32_t next = argmax({logits.f32() + (logits.numel() - vocab), size_t(vocab)});
    auto first = clock::now();  // the first token is known: time to first token
    if (profile) s.profile_with(&decode_profile);
    for (int k = 1; k < new_tokens; ++k) {
      ARCH_TRY(auto o, s.step(std::vector<int32_t>{next}, {"logits"}, /*last_only=*/true));
      const Tensor& l = o.at("logits");
      next = argmax({l.f32(), size_t(vocab)});
    }
    return Run{seconds(started, first), seconds(first, clock::now())};
  };
  std::vector<Run> runs;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    auto run = run_once();
    if (!run.ok()) return fail(run.error());
    runs.push_back(*run);
  }
  // The median run of each figure: one slow run on a shared machine does
  // not decide it (--repeat; each run is listed in the JSON).
  auto median = [&](auto field) {
    std::vector<double> v;
    for (const Run& r : runs) v.push_back(field(r));
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double ttft = median([](const Run& r) { return r.ttft_s; });
  const double decode_s = median([](const Run& r) { return r.decode_s; });
  nlohmann::json each = nlohmann::json::array();
  for (const Run& r : runs)
    each.push_back({{"ttft_ms", 1000 * r.ttft_s},
                    {"prompt_tok_s", prompt_tokens / r.ttft_s},
                    {"decode_tok_s", new_tokens > 1 ? (new_tokens - 1) / r.decode_s : 0.0}});
  nlohmann::json j = {{"model", (*m)->checkpoint.dir},
                      {"family", (*m)->family},
                      {"backend", (*m)->program.backend},
                      {"prompt_tokens", prompt_tokens},
                      {"new_tokens", new_tokens},
                      {"load_ms", 1000 * seconds(t0, t1)},
                      {"ttft_ms", 1000 * ttft},
                      {"prompt_tok_s", prompt_tokens / ttft},
                      {"decode_tok_s", new_tokens > 1 ? (new_tokens - 1) / decode_s : 0.0},
                      {"runs", each},
                      {"peak_rss_mb", peak_rss_mb()},
                      {"fused_matmuls", (*m)->program.plan.merged_nodes},
                      {"folded_adds", (*m)->program.plan.folded_adds},
                      {"fused_glus", (*m)->program.plan.fused_glus},
                      {"threads", omp_get_max_threads()}};
  if (profile) j["profile"] = {{"prompt", profile_json(prompt_profile)}, {"decode", profile_json(decode_profile)}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    const PlanStats& plan = (*m)->program.plan;
    std::printf("%s (%s, %s backend, %d threads; %d matmuls fused into %d, %d adds folded into matmuls, %d gated "
                "activations fused)\n",
                j["model"].get<std::string>().c_str(), j["family"].get<std::string>().c_str(),
                j["backend"].get<std::string>().c_str(), omp_get_max_threads(), plan.merged_nodes,
                plan.merged_groups, plan.folded_adds, plan.fused_glus);
    std::printf("  load            %10.1f ms\n", j["load_ms"].get<double>());
    std::printf("  prompt %5d    %10.1f tok/s (time to first token %.1f ms)\n", prompt_tokens,
                j["prompt_tok_s"].get<double>(), j["ttft_ms"].get<double>());
    std::printf("  decode %5d    %10.1f tok/s\n", new_tokens, j["decode_tok_s"].get<double>());
    if (runs.size() > 1) std::printf("  (medians of %zu runs; --json lists each)\n", runs.size());
    std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
    if (profile) {
      print_profile("prompt", j["profile"]["prompt"]);
      print_profile("decode", j["profile"]["decode"]);
    }
  }
  return 0;
}

}  // namespace arch::cli

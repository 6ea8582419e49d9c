// archrun bench: how fast a model loads, reads a prompt and decodes, on
// seeded random token ids; --json prints one object as the last line.
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

}  // namespace

int run_bench(const Common& c, int prompt_tokens, int new_tokens, bool as_json) {
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
  Session s(**m, prompt_tokens + new_tokens);
  auto out = s.step(prompt);
  if (!out.ok()) return fail(out.error());
  const Tensor& logits = out->at("logits");
  int32_t next = argmax({logits.f32() + (logits.numel() - vocab), size_t(vocab)});
  auto t2 = clock::now();  // the first token is known: time to first token
  for (int k = 1; k < new_tokens; ++k) {
    auto o = s.step(std::vector<int32_t>{next});
    if (!o.ok()) return fail(o.error());
    const Tensor& l = o->at("logits");
    next = argmax({l.f32(), size_t(vocab)});
  }
  auto t3 = clock::now();
  nlohmann::json j = {{"model", (*m)->checkpoint.dir},
                      {"family", (*m)->family},
                      {"backend", (*m)->program.backend},
                      {"prompt_tokens", prompt_tokens},
                      {"new_tokens", new_tokens},
                      {"load_ms", 1000 * seconds(t0, t1)},
                      {"ttft_ms", 1000 * seconds(t1, t2)},
                      {"prompt_tok_s", prompt_tokens / seconds(t1, t2)},
                      {"decode_tok_s", new_tokens > 1 ? (new_tokens - 1) / seconds(t2, t3) : 0.0},
                      {"peak_rss_mb", peak_rss_mb()}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("%s (%s, %s backend)\n", j["model"].get<std::string>().c_str(), j["family"].get<std::string>().c_str(),
                j["backend"].get<std::string>().c_str());
    std::printf("  load            %10.1f ms\n", j["load_ms"].get<double>());
    std::printf("  prompt %5d    %10.1f tok/s (time to first token %.1f ms)\n", prompt_tokens,
                j["prompt_tok_s"].get<double>(), j["ttft_ms"].get<double>());
    std::printf("  decode %5d    %10.1f tok/s\n", new_tokens, j["decode_tok_s"].get<double>());
    std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
  }
  return 0;
}

}  // namespace arch::cli

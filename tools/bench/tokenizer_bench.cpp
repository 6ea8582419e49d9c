// Tokenizer throughput (Google Benchmark, not run by the tests): encode and
// decode ~5 MB of mixed text (every shared case text, repeated) with real
// tokenizer files from ../shared/tokenizers.
//   build/bench_tokenizer [--benchmark_filter=llama3]
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "importer/text/tokenizer/tokenizer.h"

namespace {

const std::string kTokenizers = ARCHETYPE_SHARED_DIR "/tokenizers/";

const std::string& big_text() {
  static const std::string text = [] {
    std::set<std::string> texts;
    for (const char* name : {"llama3", "qwen3", "gpt2", "bert-base-uncased", "mistral"}) {
      std::ifstream f(kTokenizers + name + "/cases.jsonl");
      for (std::string line; std::getline(f, line);)
        if (!line.empty()) texts.insert(nlohmann::json::parse(line)["text"].get<std::string>());
    }
    std::string one, all;
    for (const auto& t : texts) one += t + "\n";
    while (!one.empty() && all.size() < (5u << 20)) all += one;
    return all;
  }();
  return text;
}

std::shared_ptr<const arch::Tokenizer> tokenizer(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const arch::Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) {
    auto r = arch::load_tokenizer(kTokenizers + name);
    if (r.ok()) t = *r;
  }
  return t;
}

void BM_Encode(benchmark::State& state, const std::string& name) {
  auto tok = tokenizer(name);
  if (!tok || big_text().empty()) return state.SkipWithError(("no tokenizer or texts under " + kTokenizers).c_str());
  for (auto _ : state) benchmark::DoNotOptimize(tok->encode(big_text(), false));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(big_text().size()));
}

void BM_Decode(benchmark::State& state, const std::string& name) {
  auto tok = tokenizer(name);
  if (!tok || big_text().empty()) return state.SkipWithError(("no tokenizer or texts under " + kTokenizers).c_str());
  auto ids = tok->encode(big_text(), false);
  for (auto _ : state) benchmark::DoNotOptimize(tok->decode(ids));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(big_text().size()));
}

}  // namespace

BENCHMARK_CAPTURE(BM_Encode, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt2, std::string("gpt2"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, qwen3, std::string("qwen3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bert, std::string("bert-base-uncased"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();

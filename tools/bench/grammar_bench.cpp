// Constrained decoding's cost per token (Google Benchmark, not run by the
// tests): a step's mask (every logit the grammar does not allow set to
// -inf) after a prefix of a reply under a JSON Schema, at three kinds of
// place: between an object's keys, inside a string (where nearly every
// token is allowed: the worst), inside a number. BM_Mask: a step in a
// state met before (its mask remembered: a string's later tokens);
// BM_Walk: the trie of the vocabulary walked for a state met first.
//   build/bench_grammar [--benchmark_filter=qwen3]
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime/grammar_constraint.h"
#include "engine/runtime/json_schema_grammar.h"
#include "importer/text/token_bytes.h"
#include "importer/text/tokenizer/tokenizer.h"

namespace {

const std::string kTokenizers = ARCHETYPE_SHARED_DIR "/tokenizers/";

struct Setup {
  std::shared_ptr<const arch::Tokenizer> tok;
  std::shared_ptr<const arch::GrammarVocab> vocab;
  std::shared_ptr<const arch::Grammar> grammar;
};

const Setup* setup(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Setup>> cache;
  auto& s = cache[name];
  if (!s) {
    auto tok = arch::load_tokenizer(kTokenizers + name);
    if (!tok.ok()) return nullptr;
    const auto schema = nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
        "name": {"type": "string"}, "age": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "age"]})");
    auto text = arch::json_schema_gbnf(schema, "bench");
    auto g = arch::parse_gbnf(*text, "bench");
    if (!g.ok()) return nullptr;
    s = std::make_unique<Setup>(Setup{*tok, std::make_shared<const arch::GrammarVocab>(arch::token_bytes(**tok)),
                                      std::make_shared<const arch::Grammar>(std::move(*g))});
  }
  return s.get();
}

void BM_Mask(benchmark::State& state, const std::string& name, const std::string& prefix) {
  const Setup* s = setup(name);
  if (!s) return state.SkipWithError(("no tokenizer under " + kTokenizers + name).c_str());
  const auto ids = s->tok->encode(prefix, false);
  std::vector<float> logits(s->tok->vocab_size(), 0.0f);
  arch::GrammarConstraint c(s->grammar, s->vocab, {0});
  c.mask(logits, ids);  // the prefix taken once; each iteration masks the next step
  for (auto _ : state) {
    std::fill(logits.begin(), logits.end(), 0.0f);
    c.mask(logits, ids);
    benchmark::DoNotOptimize(logits.data());
  }
  state.counters["allowed"] = double(c.last_allowed());
  state.counters["vocab"] = double(logits.size());
}

// A state met for the first time: the trie walked (the states' byte table
// warm, as after a reply's first steps), no remembered mask.
void BM_Walk(benchmark::State& state, const std::string& name, const std::string& prefix) {
  const Setup* s = setup(name);
  if (!s) return state.SkipWithError(("no tokenizer under " + kTokenizers + name).c_str());
  arch::GrammarMatcher m(s->grammar);
  m.accept(s->tok->decode(s->tok->encode(prefix, false)));
  arch::GrammarStates states(m);
  std::vector<char> allowed(s->tok->vocab_size());
  size_t count = 0, visited = 0;
  for (auto _ : state) {
    std::fill(allowed.begin(), allowed.end(), 0);
    count = s->vocab->trie.allowed(states, m.state(), allowed, &visited);
  }
  state.counters["allowed"] = double(count);
  state.counters["trie_nodes"] = double(visited);
}

// A whole reply, token by token: each step's mask (a state met first
// walks the trie; one met before is remembered), per token.
void BM_Reply(benchmark::State& state, const std::string& name) {
  const Setup* s = setup(name);
  if (!s) return state.SkipWithError(("no tokenizer under " + kTokenizers + name).c_str());
  const auto ids = s->tok->encode("{\"name\": \"Alice Smith, who lives by the sea and likes long walks\", \"age\": 42, "
                                  "\"tags\": [\"red\", \"green\", \"a rather longer tag\"]}", false);
  std::vector<float> logits(s->tok->vocab_size(), 0.0f);
  for (auto _ : state) {
    arch::GrammarConstraint c(s->grammar, s->vocab, {0});
    for (size_t k = 0; k <= ids.size(); ++k) c.mask(logits, std::vector<int32_t>(ids.begin(), ids.begin() + ptrdiff_t(k)));
  }
  state.counters["tokens"] = double(ids.size() + 1);
  state.counters["per_token_us"] = benchmark::Counter(double(ids.size() + 1), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

}  // namespace

int main(int argc, char** argv) {
  for (const char* name : {"qwen3", "llama3", "llama2"}) {
    benchmark::RegisterBenchmark((std::string("BM_Mask/") + name + "/between_keys").c_str(), BM_Mask, name, "{\"name\": \"Al\", ");
    benchmark::RegisterBenchmark((std::string("BM_Mask/") + name + "/in_string").c_str(), BM_Mask, name, "{\"name\": \"Al");
    benchmark::RegisterBenchmark((std::string("BM_Mask/") + name + "/in_number").c_str(), BM_Mask, name, "{\"name\": \"Al\", \"age\": 4");
    benchmark::RegisterBenchmark((std::string("BM_Walk/") + name + "/in_string").c_str(), BM_Walk, name, "{\"name\": \"Al");
    benchmark::RegisterBenchmark((std::string("BM_Walk/") + name + "/in_number").c_str(), BM_Walk, name, "{\"name\": \"Al\", \"age\": 4");
    benchmark::RegisterBenchmark((std::string("BM_Reply/") + name).c_str(), BM_Reply, name);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}

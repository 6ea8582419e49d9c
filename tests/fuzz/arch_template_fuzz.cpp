// The .arch parser and checker on any text; then, where it parses, an
// instantiation of each graph with a config (fuzzed too: the text before a
// NUL, read as config.json is, where it is some JSON object).
#include "engine/core/json_text.h"
#include "engine/core/limits.h"
#include "dsl/check.h"
#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "importer/checkpoint/config.h"
#include "kernels/kernels.h"
#include "tests/fuzz/fuzz_input.h"

// Limits sized for fuzzing: a config may ask for thousands of layers or
// experts, each instantiated whole; a few hundred loop iterations and
// 50,000 nodes reach every check the defaults (65,536 and 4,000,000) do,
// without seconds a run.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)arch::set_limit("loop_iterations", 512);
  (void)arch::set_limit("graph_nodes", 50000);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [config_text, source] = arch::fuzz::split_at_nul(data, size);
  auto t = arch::dsl::parse_template("fuzz.arch", source);
  if (!t.ok()) return 0;
  (void)arch::dsl::check_template(*t, arch::op_table());
  arch::dsl::InstantiateOptions opt;
  // As read_config reads it (the depth limit, duplicate keys, normalised).
  auto config = arch::parse_json(config_text, "config.json");
  if (config.ok() && config->is_object()) {
    arch::normalize_config(*config);
    opt.config = std::move(*config);
  }
  for (const auto& g : t->graphs) {
    opt.graph = g.name;
    (void)arch::dsl::instantiate(*t, opt, arch::op_table());
  }
  return 0;
}

// The .arch parser and checker on any text; then, where it parses, an
// instantiation of each graph with a small config (fuzzed too: the text
// before a NUL, as JSON, where it is some).
#include "dsl/check.h"
#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "kernels/kernels.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [config_text, source] = arch::fuzz::split_at_nul(data, size);
  auto t = arch::dsl::parse_template("fuzz.arch", source);
  if (!t.ok()) return 0;
  (void)arch::dsl::check_template(*t, arch::op_table());
  arch::dsl::InstantiateOptions opt;
  opt.config = nlohmann::json::parse(config_text, nullptr, false);
  if (!opt.config.is_object()) opt.config = nlohmann::json::object();
  for (const auto& g : t->graphs) {
    opt.graph = g.name;
    (void)arch::dsl::instantiate(*t, opt, arch::op_table());
  }
  return 0;
}

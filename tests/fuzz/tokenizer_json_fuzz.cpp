// tokenizer.json loaded from any bytes, then a text encoded and decoded
// (the text before a NUL, or a fixed one).
#include "tests/fuzz/fuzz_input.h"
#include "importer/text/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [text, json] = arch::fuzz::split_at_nul(data, size);
  auto tok = arch::tokenizer_from_json(json, "fuzz-tokenizer.json");
  if (!tok.ok()) return 0;
  if (text.empty()) text = "Hello world! 12 ünïcode 漢字 <s>";
  auto ids = (*tok)->encode(text, true);
  (void)(*tok)->decode(ids, false);
  return 0;
}

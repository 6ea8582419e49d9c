// A SentencePiece tokenizer.model from any bytes, then a text encoded.
#include "tests/fuzz/fuzz_input.h"
#include "importer/text/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto tok = arch::load_tokenizer(arch::fuzz::input_file(data, size, "-tokenizer.model"));
  if (!tok.ok()) return 0;
  auto ids = (*tok)->encode("Hello world! ünïcode 漢字", true);
  (void)(*tok)->decode(ids, false);
  return 0;
}

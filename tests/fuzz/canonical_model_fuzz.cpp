// A file read as a canonical model (archrun import's one-file layout): its
// header, the config in its metadata, the quantized tensors' descriptions.
// load_canonical itself, not load_checkpoint: that asks for the "format"
// key first, which random bytes seldom have.
#include "importer/checkpoint/canonical.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = arch::fuzz::input_file(data, size, ".safetensors");
  auto c = arch::load_canonical(path);
  if (c.ok())
    for (const auto& [name, t] : c->tensors) (void)t.numel(), (void)t.nbytes();
  (void)arch::read_side_file(path, "tokenizer.json");
  return 0;
}

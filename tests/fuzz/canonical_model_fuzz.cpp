// A file given as a canonical model (archrun import's one-file layout): its
// header, metadata, quantized tensors' descriptions and side files.
#include "importer/checkpoint.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = arch::load_checkpoint(arch::fuzz::input_file(data, size, ".safetensors"));
  if (c.ok())
    for (const auto& [name, t] : c->tensors) (void)t.numel();
  return 0;
}

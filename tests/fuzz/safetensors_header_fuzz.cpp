// A safetensors file's header and its checks (offsets, overlaps, dtype x
// shape = bytes) on any bytes.
#include "importer/checkpoint/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = arch::read_safetensors(arch::fuzz::input_file(data, size, ".safetensors"));
  if (f.ok())
    for (const auto& [name, t] : f->tensors) (void)t.nbytes();
  return 0;
}

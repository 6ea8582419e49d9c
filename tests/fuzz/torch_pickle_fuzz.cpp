// A torch.save file (zip or legacy layout) read by the restricted unpickler:
// the zip directory, every opcode's bounds, the allow-list, each tensor's
// size and stride against its storage, on any bytes.
#include "importer/checkpoint/torch_pickle.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = arch::read_torch_file(arch::fuzz::input_file(data, size, ".bin"));
  if (f.ok())  // every byte of every tensor is there to read
    for (const auto& [name, t] : f->tensors) {
      const auto* p = static_cast<const volatile uint8_t*>(t.data);
      uint8_t sum = 0;
      for (size_t i = 0; i < t.nbytes(); ++i) sum += p[i];
      (void)sum;
    }
  return 0;
}

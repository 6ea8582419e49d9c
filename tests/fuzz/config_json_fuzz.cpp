// config.json read and normalised (importer/checkpoint/config.h) from any bytes.
#include "importer/checkpoint/config.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)arch::read_config(arch::fuzz::input_file(data, size, "-config.json"));
  return 0;
}

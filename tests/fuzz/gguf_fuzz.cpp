// A GGUF file on any bytes: the header's counts, strings, arrays and tensor
// infos against the file; then what a load makes of it (every tensor in
// the form the kernels read, the checkpoint through its name map, the
// tokenizer.json its vocabulary stands for).
#include "importer/checkpoint/gguf.h"
#include "importer/checkpoint/gguf_checkpoint.h"
#include "importer/checkpoint/gguf_tensor.h"
#include "importer/checkpoint/gguf_tokenizer.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = arch::read_gguf(arch::fuzz::input_file(data, size, ".gguf"));
  if (!f.ok()) return 0;
  for (const auto& info : f->tensors) {
    auto t = arch::gguf_tensor(*f, info);
    if (t.ok() && t->numel() > 0) {
      std::vector<float> row(size_t(t->shape.empty() ? 1 : t->shape.back()));
      arch::widen_row(*t, t->numel() / int64_t(row.size()) - 1, row.data());  // the last row, read
    }
  }
  (void)arch::load_gguf_checkpoint(f->path, arch::default_gguf_maps_dir());
  (void)arch::gguf_tokenizer_json(*f, arch::default_gguf_maps_dir());
  (void)arch::gguf_tokenizer_config(*f);
  return 0;
}

#include "importer/checkpoint/gguf_checkpoint.h"

#include "importer/checkpoint/config.h"
#include "importer/checkpoint/gguf_tensor.h"

namespace arch {

namespace {

// llama.cpp's converter wrote row h·hd + 2i from Hugging Face row h·hd + i
// and row h·hd + 2i + 1 from h·hd + hd/2 + i (each head's halves
// interleaved); Hugging Face row r is GGUF row order[r].
std::vector<int64_t> uninterleave_order(int64_t rows, int64_t heads) {
  const int64_t hd = rows / heads;
  std::vector<int64_t> order(static_cast<size_t>(rows));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < hd / 2; ++i) {
      order[size_t(h * hd + i)] = h * hd + 2 * i;
      order[size_t(h * hd + hd / 2 + i)] = h * hd + 2 * i + 1;
    }
  return order;
}

std::string architecture_of(const GgufFile& file) {
  const GgufValue* a = file.find("general.architecture");
  return a && a->value.is_string() ? a->value.get<std::string>() : "";
}

}  // namespace

Result<Checkpoint> gguf_checkpoint(const GgufFile& file, const GgufNameMap& map) {
  Checkpoint ckpt;
  ckpt.dir = file.path;
  ckpt.config = gguf_config(map, file);
  normalize_config(ckpt.config);
  for (const GgufTensorInfo& info : file.tensors) {
    const std::string name = map.hf_name(info.name).value_or(info.name);
    ARCH_TRY(Tensor t, gguf_tensor(file, info));
    const std::string where = file.path + " (GGUF '" + info.name + "')";
    if (auto field = map.interleaved_heads(info.name)) {
      const auto heads = ckpt.config.find(*field);
      const int64_t rows = t.shape.empty() ? 0 : t.shape[0];
      if (heads == ckpt.config.end() || !heads->is_number_integer() || heads->get<int64_t>() <= 0 ||
          rows % heads->get<int64_t>() != 0 || (rows / heads->get<int64_t>()) % 2 != 0)
        return error(where + ": its rows are interleaved per head, but the config's " + *field + " (" +
                     (heads == ckpt.config.end() ? std::string("absent") : heads->dump()) + ") does not split its " +
                     std::to_string(rows) + " rows into heads of an even size");
      t = reorder_rows(t, uninterleave_order(rows, heads->get<int64_t>()));
    }
    if (!ckpt.tensors.emplace(name, std::move(t)).second)
      return error(where + ": a second tensor maps to '" + name + "' (" + map.path + ")");
    ckpt.tensor_file.emplace(name, where);
  }
  return ckpt;
}

Result<Checkpoint> load_gguf_checkpoint(const std::string& path, const std::string& maps_dir) {
  ARCH_TRY(GgufFile file, read_gguf(path));
  const std::string arch = architecture_of(file);
  if (arch.empty()) return error(path + ": the metadata has no general.architecture string");
  auto map = load_gguf_name_map(maps_dir, arch);
  if (!map) return error(path + ": " + map.error().message);
  return gguf_checkpoint(file, *map);
}

}  // namespace arch

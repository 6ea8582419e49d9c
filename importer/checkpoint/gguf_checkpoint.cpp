#include "importer/checkpoint/gguf_checkpoint.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <map>

#include "engine/core/quant.h"
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

// Values less what the converter added (Gemma's norms are stored as 1 + w):
// in float32, so w comes back to within half an ulp of 1.
Tensor shifted_back(const Tensor& t, double by) {
  Tensor f = to_f32(t);  // a copy
  for (int64_t i = 0; i < f.numel(); ++i) f.f32()[i] = float(double(f.f32()[i]) - by);
  return f;
}

// GPT-2's Conv1D weights are [in, out]; llama.cpp's converter stores them
// [out, in]. Put back in the stored float type; block-quantized rows can
// only be transposed as float32.
Tensor transposed(const Tensor& t) {
  const Tensor src = is_block_quantized(t.dtype) ? to_f32(t) : t;
  const int64_t rows = src.shape[0], cols = src.shape[1];
  const size_t size = dtype_size(src.dtype);
  Tensor out = Tensor::zeros(src.dtype, {cols, rows});
  const auto* from = static_cast<const uint8_t*>(src.data);
  auto* to = static_cast<uint8_t*>(out.data);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) std::memcpy(to + size_t(c * rows + r) * size, from + size_t(r * cols + c) * size, size);
  return out;
}

// Per head, each part's rows in turn (a "^T" part's [heads, in, rows] read
// per head transposed): DeepSeek's kv_b_proj, [heads x (nope + v), rank],
// from llama.cpp's k_b [heads, rank, nope] and v_b [heads, v, rank].
Result<Tensor> join_per_head(const GgufNameMap::Joined& j, const std::string& block,
                             const std::vector<std::optional<Tensor>>& parts, const nlohmann::json& config,
                             const std::string& path) {
  const std::string where = path + ": '" + fill_block(j.name, block) + "'";
  const auto heads_it = config.find(j.heads);
  if (heads_it == config.end() || !heads_it->is_number_integer())
    return error(where + ": joined per head, but the config has no " + j.heads);
  const int64_t heads = heads_it->get<int64_t>();
  std::vector<Tensor> f32;
  int64_t rows = 0, cols = -1;
  for (size_t p = 0; p < parts.size(); ++p) {
    const std::string part = fill_block(j.parts[p].name, block);
    if (!parts[p]) return error(where + ": its part '" + part + "' is missing");
    const Tensor& t = *parts[p];
    const bool transposed = j.parts[p].transposed;
    if (t.shape.size() != 3 || t.shape[0] != heads)
      return error(where + ": part '" + part + "' is " + dims_str(t.shape) + ", expected [" +
                   std::to_string(heads) + " heads, ., .]");
    const int64_t part_rows = transposed ? t.shape[2] : t.shape[1], part_cols = transposed ? t.shape[1] : t.shape[2];
    if (cols >= 0 && part_cols != cols)
      return error(where + ": its parts' rows are " + std::to_string(cols) + " and " + std::to_string(part_cols) +
                   " wide");
    cols = part_cols;
    rows += part_rows;
    f32.push_back(to_f32(t));
  }
  Tensor out = Tensor::zeros(DType::F32, {heads * rows, cols});
  float* o = out.f32();
  for (int64_t h = 0; h < heads; ++h)
    for (size_t p = 0; p < parts.size(); ++p) {
      const Tensor& t = f32[p];
      const bool transposed = j.parts[p].transposed;
      const int64_t a = t.shape[1], b = t.shape[2];
      const float* src = t.f32() + h * a * b;
      if (transposed) {
        for (int64_t r = 0; r < b; ++r)
          for (int64_t c = 0; c < a; ++c) *o++ = src[c * b + r];
      } else {
        o = std::copy(src, src + a * b, o);
      }
    }
  return out;
}

std::string architecture_of(const GgufFile& file) {
  const GgufValue* a = file.find("general.architecture");
  return a && a->value.is_string() ? a->value.get<std::string>() : "";
}

}  // namespace

Result<Checkpoint> gguf_checkpoint(const GgufFile& file, const GgufNameMap& map) {
  Checkpoint ckpt;
  ckpt.dir = file.path;
  ARCH_TRY(ckpt.config, gguf_config(map, file));
  normalize_config(ckpt.config);
  // Parts of joined tensors, by (entry, block number): set aside until all are read.
  std::map<std::pair<size_t, std::string>, std::vector<std::optional<Tensor>>> parts_of;
  for (const GgufTensorInfo& info : file.tensors) {
    if (map.read_into_config(info.name)) continue;  // rope_scaling's, say
    const std::string name = map.hf_name(info.name).value_or(info.name);
    ARCH_TRY(Tensor t, gguf_tensor(file, info));
    const std::string where = file.path + " (GGUF '" + info.name + "')";
    if (auto part = map.joined_part(info.name)) {
      auto& slots = parts_of[{part->entry, part->block}];
      slots.resize(map.joined[part->entry].parts.size());
      slots[part->index] = std::move(t);
      continue;
    }
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
    if (const double by = map.shift(info.name); by != 0) t = shifted_back(t, by);
    if (map.is_transposed(info.name)) {
      if (t.shape.size() != 2)
        return error(where + ": " + map.path + " says it is stored transposed, but it has " +
                     std::to_string(t.shape.size()) + " dims");
      t = transposed(t);
    }
    // llama.cpp stacks a layer's experts into one [experts, out, in] tensor;
    // the template reads each expert's matrix: views of its rows.
    std::vector<std::pair<std::string, Tensor>> parts;
    if (name.find("{e}") != std::string::npos) {
      if (t.shape.size() != 3)
        return error(where + ": " + map.path + " reads it as one matrix per expert, but it has " +
                     std::to_string(t.shape.size()) + " dims, not [experts, out, in]");
      const size_t bytes = t.nbytes() / size_t(std::max<int64_t>(t.shape[0], 1));
      for (int64_t e = 0; e < t.shape[0]; ++e) {
        Tensor expert = Tensor::view(t.dtype, {t.shape[1], t.shape[2]}, static_cast<uint8_t*>(t.data) + size_t(e) * bytes,
                                     t.owner);
        expert.mapped = t.mapped;
        parts.emplace_back(fill_expert(name, e), std::move(expert));
      }
    } else {
      parts.emplace_back(name, std::move(t));
    }
    for (auto& [part, tensor] : parts) {
      if (!ckpt.tensors.emplace(part, std::move(tensor)).second)
        return error(where + ": a second tensor maps to '" + part + "' (" + map.path + ")");
      ckpt.tensor_file.emplace(part, where);
    }
  }
  for (auto& [key, slots] : parts_of) {
    const GgufNameMap::Joined& j = map.joined[key.first];
    ARCH_TRY(Tensor t, join_per_head(j, key.second, slots, ckpt.config, file.path));
    const std::string name = fill_block(j.name, key.second);
    ckpt.tensor_file.emplace(name, file.path + " (GGUF '" + fill_block(j.parts[0].name, key.second) + "' and the rest, joined)");
    ckpt.tensors.emplace(name, std::move(t));
  }
  return ckpt;
}

Result<nlohmann::json> gguf_summary(const std::string& path, const std::string& maps_dir) {
  ARCH_TRY(GgufFile file, read_gguf(path));
  auto map = load_gguf_name_map(maps_dir, architecture_of(file));
  if (!map) return error(path + ": " + map.error().message);
  nlohmann::json j = {{"version", file.version}, {"architecture", architecture_of(file)}, {"name_map", map->path},
                      {"metadata_keys", file.metadata.size()}};
  if (const GgufValue* name = file.find("general.name"); name && name->value.is_string()) j["name"] = name->value;
  std::map<std::string, int> types;
  for (const GgufTensorInfo& info : file.tensors) {
    nlohmann::json t = {{"gguf", info.name}, {"name", map->hf_name(info.name).value_or(info.name)},
                        {"type", ggml_type_name(info.type)}};
    if (map->read_into_config(info.name)) t["name"] = "(read into the config)";
    else if (!map->hf_name(info.name)) t["unmapped"] = true;
    if (map->interleaved_heads(info.name)) t["rows"] = "un-interleaved";
    if (map->shift(info.name) != 0) t["values"] = "shifted back by " + std::to_string(map->shift(info.name));
    if (map->is_transposed(info.name)) t["transposed"] = true;
    if (info.type == 8 || info.type == 2) t["repacked"] = true;
    j["tensors"].push_back(t);
    ++types[ggml_type_name(info.type)];
  }
  j["types"] = types;
  return j;
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

#include "importer/checkpoint/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/config.h"
#include "importer/checkpoint/fp8_weights.h"
#include "importer/checkpoint/gguf_checkpoint.h"
#include "importer/checkpoint/gguf_side_files.h"
#include "engine/core/json_text.h"
#include "engine/core/mapped_file.h"
#include "importer/checkpoint/safetensors.h"
#include "importer/checkpoint/torch_pickle.h"

namespace arch {

namespace fs = std::filesystem;

namespace {

using json = nlohmann::json;

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// Adds every tensor of the file at `path`; a name already taken by another
// file is an error, since which copy is meant would be a guess.
Status add_tensors(Checkpoint& ckpt, const std::string& path, std::map<std::string, Tensor> tensors) {
  for (auto& [name, tensor] : tensors) {
    auto [it, fresh] = ckpt.tensor_file.emplace(name, path);
    if (!fresh)
      return error(ckpt.dir + ": tensor '" + name + "' is defined in two shards: " + it->second + " and " + path);
    ckpt.tensors.emplace(name, std::move(tensor));
  }
  return {};
}

using Aliases = std::vector<std::pair<std::string, std::string>>;

// torch.save's files. Not the weights, though saved beside them by
// transformers' Trainer: its arguments, optimizer, scheduler and RNG states.
bool is_torch_file(const fs::path& p) {
  const std::string ext = p.extension().string(), name = p.filename().string();
  const bool training_state = name == "training_args.bin" || name.rfind("optimizer", 0) == 0 ||
                              name.rfind("scheduler", 0) == 0 || name.rfind("rng_state", 0) == 0;
  return (ext == ".bin" || ext == ".pth" || ext == ".pt") && !training_state;
}

// A weights file: safetensors, or a torch.save pickle (torch_pickle.h). A
// safetensors header's __metadata__ entries are kept as candidate aliases
// (resolve_aliases).
Status load_single(Checkpoint& ckpt, const fs::path& file, Aliases& aliases) {
  if (is_torch_file(file)) {
    ARCH_TRY(TorchFile f, read_torch_file(file.string()));
    return add_tensors(ckpt, f.path, std::move(f.tensors));
  }
  ARCH_TRY(SafetensorsFile f, read_safetensors(file.string()));
  for (auto& [key, value] : f.metadata) aliases.emplace_back(key, value);
  return add_tensors(ckpt, f.path, std::move(f.tensors));
}

// safetensors' save_model stores a shared tensor once and records each
// other name of it in __metadata__ as {"removed name": "kept name"}
// (a tied lm_head.weight kept, model.embed_tokens.weight its alias). An
// entry whose value is a stored tensor and whose key is not one names the
// same bytes; the rest ({"format": "pt"}) is plain metadata.
void resolve_aliases(Checkpoint& ckpt, const Aliases& aliases) {
  for (const auto& [alias, target] : aliases) {
    auto it = ckpt.tensors.find(target);
    if (it == ckpt.tensors.end() || ckpt.tensors.count(alias)) continue;
    const std::string file = ckpt.tensor_file[target];
    ckpt.tensors.emplace(alias, it->second);
    ckpt.tensor_file.emplace(alias, file + " (as '" + target + "', its __metadata__ alias)");
  }
}

// index.json's weight_map: tensor name -> shard file name beside the index.
Result<std::map<std::string, std::string>> read_weight_map(const std::string& index_path) {
  ARCH_TRY(auto file, MappedFile::open(index_path));
  ARCH_TRY(json index, parse_json(file->text(), index_path));
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    return error(index_path + ": expected an object with a \"weight_map\" object (tensor name -> shard file)");
  std::map<std::string, std::string> weight_map;
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string())
      return error(index_path + ": tensor '" + tensor + "' maps to " + json_type_name(shard) +
                   ", expected a shard file name");
    std::string name = shard.get<std::string>();
    fs::path p(name);
    bool escapes = p.is_absolute() || name.empty() ||
                   std::any_of(p.begin(), p.end(), [](const fs::path& part) { return part == ".."; });
    if (escapes)
      return error(index_path + ": tensor '" + tensor + "' maps to '" + name +
                   "', expected a file name inside the checkpoint directory");
    weight_map[tensor] = p.lexically_normal().string();  // "./a" and "a" are one shard
  }
  return weight_map;
}

Status load_sharded(Checkpoint& ckpt, const fs::path& index_path, Aliases& aliases) {
  const std::string index = index_path.string();
  ARCH_TRY(auto weight_map, read_weight_map(index));

  std::map<std::string, std::string> first_tensor_of;  // shard -> a tensor naming it, for messages
  for (const auto& [tensor, shard] : weight_map) first_tensor_of.emplace(shard, tensor);
  for (const auto& [shard, tensor] : first_tensor_of) {
    fs::path shard_path = index_path.parent_path() / shard;
    if (!is_file(shard_path))
      return error(index + ": shard '" + shard + "' (holding tensor '" + tensor + "' and others) is missing: " +
                   shard_path.string() + " is not a file");
    ARCH_TRY_STATUS(load_single(ckpt, shard_path, aliases));
  }
  for (const auto& [tensor, shard] : weight_map) {
    std::string expected = (index_path.parent_path() / shard).string();
    auto it = ckpt.tensor_file.find(tensor);
    if (it == ckpt.tensor_file.end() || it->second != expected)
      return error(index + ": tensor '" + tensor + "' is mapped to shard '" + shard +
                   "', but that file does not contain it" +
                   (it == ckpt.tensor_file.end() ? std::string() : " (it is in " + it->second + ")"));
  }
  return {};
}

// The directory's weight files of one kind (*.safetensors, or torch's
// *.bin / *.pth / *.pt), sorted so that messages are stable.
std::vector<fs::path> weight_files(const fs::path& dir, bool torch) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const bool kind = torch ? is_torch_file(it->path()) : it->path().extension() == ".safetensors";
    if (kind && is_file(it->path())) found.push_back(it->path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The names transformers and diffusers save under, safetensors first (a
// repository holding both formats holds the same weights twice); then the
// directory's only .safetensors file, or else its only .bin / .pth / .pt.
Status load_weights(Checkpoint& ckpt, const fs::path& dir, Aliases& aliases) {
  for (const char* name : {"model.safetensors", "diffusion_pytorch_model.safetensors", "pytorch_model.bin",
                           "diffusion_pytorch_model.bin"}) {
    fs::path single = dir / name;
    fs::path index = dir / (std::string(name) + ".index.json");
    if (is_file(single)) return load_single(ckpt, single, aliases);
    if (is_file(index)) return load_sharded(ckpt, index, aliases);
  }
  std::vector<fs::path> candidates = weight_files(dir, false);
  if (candidates.empty()) candidates = weight_files(dir, true);
  if (candidates.size() == 1) return load_single(ckpt, candidates[0], aliases);
  std::string msg = "no weights found in " + ckpt.dir +
                    " (expected model.safetensors, model.safetensors.index.json, pytorch_model.bin or "
                    "pytorch_model.bin.index.json)";
  if (!candidates.empty()) {
    msg += "; it holds " + std::to_string(candidates.size()) + " other weight files (";
    for (size_t i = 0; i < candidates.size(); ++i) msg += (i ? ", " : "") + candidates[i].filename().string();
    msg += ") and nothing says which are the weights";
  }
  return error(msg);
}

}  // namespace

Result<Checkpoint> load_checkpoint(const std::string& dir, const std::string& gguf_maps) {
  std::error_code ec;
  fs::file_status st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) return error(dir + ": cannot read: " + ec.message());
  if (!fs::exists(st)) return error(dir + ": checkpoint directory does not exist");
  if (auto canonical = canonical_file_of(dir)) return load_canonical(*canonical);
  if (fs::is_regular_file(st) && is_gguf_file(dir))
    return load_gguf_checkpoint(dir, gguf_maps.empty() ? default_gguf_maps_dir() : gguf_maps);
  if (fs::is_regular_file(st) && fs::path(dir).extension() == ".safetensors") return not_canonical_reason(dir);
  if (!fs::is_directory(st))
    return error(dir + ": not a directory (a checkpoint is a directory, a GGUF file, or a canonical model written by "
                       "archrun import)");

  Checkpoint ckpt;
  ckpt.dir = dir;
  ARCH_TRY(ckpt.config, read_config((fs::path(dir) / "config.json").string()));
  Aliases aliases;
  ARCH_TRY_STATUS(load_weights(ckpt, fs::path(dir), aliases));
  ARCH_TRY_STATUS(dequantize_fp8_weights(ckpt));
  resolve_aliases(ckpt, aliases);
  return ckpt;
}

}  // namespace arch

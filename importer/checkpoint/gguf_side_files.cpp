#include "importer/checkpoint/gguf_side_files.h"

#include <filesystem>
#include <map>
#include <memory>
#include <mutex>

#include "importer/checkpoint/gguf.h"
#include "importer/checkpoint/gguf_names.h"
#include "importer/checkpoint/gguf_tokenizer.h"

namespace arch {

namespace {

// A GGUF header with a 150k-token vocabulary takes tens of milliseconds to
// read, and a load asks for four side files: read it once.
Result<std::shared_ptr<const GgufFile>> cached(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::pair<std::filesystem::file_time_type, std::shared_ptr<const GgufFile>>> files;
  std::error_code ec;
  const auto stamp = std::filesystem::last_write_time(path, ec);
  std::lock_guard lock(mu);
  auto it = files.find(path);
  if (it != files.end() && !ec && it->second.first == stamp) return it->second.second;
  ARCH_TRY(GgufFile f, read_gguf(path));
  auto shared = std::make_shared<const GgufFile>(std::move(f));
  files[path] = {stamp, shared};
  return shared;
}

}  // namespace

bool is_gguf_path(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && is_gguf_file(path);
}

Result<std::optional<std::string>> gguf_side_file(const std::string& path, const std::string& name,
                                                  const std::string& maps_dir) {
  using text = std::optional<std::string>;
  ARCH_TRY(auto file, cached(path));
  if (name == "tokenizer.json") {
    if (!file->find("tokenizer.ggml.model")) return text();
    ARCH_TRY(std::string json, gguf_tokenizer_json(*file, maps_dir));
    return text(std::move(json));
  }
  if (name == "tokenizer_config.json") {
    if (!file->find("tokenizer.ggml.model")) return text();
    ARCH_TRY(auto config, gguf_tokenizer_config(*file));
    return text(config.dump());
  }
  if (name == "config.json" || name == "generation_config.json") {
    const GgufValue* arch = file->find("general.architecture");
    if (!arch || !arch->value.is_string()) return text();
    auto map = load_gguf_name_map(maps_dir, arch->value.get<std::string>());
    if (!map) return error(path + ": " + map.error().message);
    ARCH_TRY(nlohmann::json config, gguf_config(*map, *file));
    if (name == "config.json") return text(config.dump());
    nlohmann::json generation = nlohmann::json::object();
    for (const char* id : {"bos_token_id", "eos_token_id", "pad_token_id"})
      if (config.contains(id)) generation[id] = config[id];
    return text(generation.dump());
  }
  return text();
}

}  // namespace arch

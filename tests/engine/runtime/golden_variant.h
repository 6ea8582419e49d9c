// A golden checkpoint rewritten on the fly into a scratch directory: its
// config changed, tensors added or replaced, so a test can make exactly the
// checkpoint whose loading it asserts.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/shared_data.h"

namespace arch::testing {

struct GoldenVariant {
  std::filesystem::path dir;

  // `config_changes` merged into the golden's config; `tensors` added to
  // its tensors, or replacing those of the same name; `drop` left out.
  GoldenVariant(const std::string& golden, const std::string& tag, const nlohmann::json& config_changes,
                const std::map<std::string, Tensor>& tensors = {}, const std::vector<std::string>& drop = {}) {
    dir = std::filesystem::temp_directory_path() / (tag + "_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    auto ckpt = load_checkpoint(golden_dir(golden));
    EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
    if (!ckpt.ok()) return;
    nlohmann::json config = nlohmann::json::parse(std::ifstream(golden_dir(golden) + "/config.json"));
    config.update(config_changes);
    std::ofstream(dir / "config.json") << config.dump(2);
    std::map<std::string, Tensor> all(ckpt->tensors.begin(), ckpt->tensors.end());
    for (const auto& [name, t] : tensors) all[name] = t;
    for (const auto& name : drop) all.erase(name);
    std::vector<std::pair<std::string, Tensor>> list(all.begin(), all.end());
    Status st = write_safetensors((dir / "model.safetensors").string(), list);
    EXPECT_TRUE(st.ok()) << st.error().message;
  }
  ~GoldenVariant() { std::filesystem::remove_all(dir); }
  std::string path() const { return dir.string(); }
};

// A float32 tensor of `shape`, every element `value`.
inline Tensor filled(Dims shape, float value) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value;
  return t;
}

}  // namespace arch::testing

// A checkpoint that wraps a family's text model (a multimodal layout:
// config.text_config, tensors under model.language_model.*) runs through
// the text family unchanged, by a registry's [[family.wrapper]]: built here
// from the gemma3_text golden, with a registry of the test's own (the
// shipped one runs Gemma 3's images: gemma3_vlm.arch).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

TEST(WrappedModel, Gemma3ConditionalGenerationRunsItsTextModel) {
  std::string dir = testing::golden_dir("gemma3_text");
  ARCH_REQUIRE_SHARED(dir);
  auto text = load_checkpoint(dir);
  ASSERT_TRUE(text.ok()) << text.error().message;
  fs::path wrapped = fs::temp_directory_path() / ("wrapped_gemma3_" + std::to_string(getpid()));
  fs::create_directories(wrapped);

  // The text config nested sparsely: values equal to Gemma3TextConfig's
  // defaults are left out, as transformers writes nested configs.
  nlohmann::json text_config = text->config;
  for (const char* k : {"rope_local_base_freq", "rms_norm_eps", "hidden_activation", "model_type"})
    text_config.erase(k);
  nlohmann::json config = {{"model_type", "gemma3"},
                           {"text_config", text_config},
                           {"vision_config", {{"hidden_size", 8}}}};
  std::ofstream(wrapped / "config.json") << config.dump(2);
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& [name, t] : text->tensors)
    tensors.emplace_back("model.language_model." + name.substr(std::string("model.").size()), t);
  tensors.emplace_back("model.vision_tower.patch.weight", Tensor::zeros(DType::F32, {8, 3}));
  ASSERT_TRUE(write_safetensors((wrapped / "model.safetensors").string(), tensors).ok());

  fs::path families = wrapped / "families";
  fs::create_directories(families);
  for (const char* t : {"gemma.arch", "llama.arch"})
    fs::copy_file(fs::path(ARCHETYPE_SOURCE_DIR) / "families" / t, families / t);
  std::ofstream(families / "registry.toml") << R"([[family]]
name = "LlamaStylePlus"
template = "gemma.arch"
model_types = ["gemma3_text"]

[[family.wrapper]]
model_type = "gemma3"
config = "text_config"
tensor_prefixes = [["model.language_model.", "model."]]
unread = [["model.vision_tower", "the image tower"]]
defaults = { model_type = "gemma3_text", hidden_activation = "gelu_pytorch_tanh", rms_norm_eps = 1e-6, rope_local_base_freq = 10000.0 }
)";
  LoadOptions lo;
  lo.families = families.string();
  auto model = load_model(wrapped.string(), lo);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->family, "LlamaStylePlus");
  EXPECT_NE((*model)->reason.find("wraps"), std::string::npos) << (*model)->reason;
  EXPECT_EQ((*model)->unused_tensors, std::vector<std::string>{"model.vision_tower.patch.weight"});

  auto ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  Session s(**model, int64_t(ids.size()));
  auto out = s.step(ids);
  ASSERT_TRUE(out.ok()) << out.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& ref = expected->tensors.at("logits");
  auto c = testing::compare_f32(out->at("logits").f32(), ref.f32(), ref.numel());
  EXPECT_TRUE(c.ok()) << "logits differ by " << c.max_abs << " (allowed " << c.bound << ")";
  fs::remove_all(wrapped);
}

}  // namespace
}  // namespace arch

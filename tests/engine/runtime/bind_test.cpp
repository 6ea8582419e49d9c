// A weight whose shape does not fit is reported by the checkpoint tensor's
// own name and shape first, then the template's declaration, then the op
// that reads it and the blocks that led there: an imported template's
// line alone does not say which family's call it was.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/runtime/model.h"
#include "tests/engine/runtime/golden_variant.h"

namespace arch {
namespace {

namespace fs = std::filesystem;
using testing::filled;
using testing::GoldenVariant;

const std::string kLlama = std::string(ARCHETYPE_FAMILIES_DIR) + "/llama.arch";

bool starts_with(const std::string& text, const std::string& head) { return text.rfind(head, 0) == 0; }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The checkpoint's norm is [16] where the config makes it [64]: found when
// the weights are bound.
TEST(BindWeights, WrongCheckpointShapeNamesTheTensorFirst) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llama"));
  GoldenVariant v("llama", "llama_short_norm", nlohmann::json::object(),
                  {{"model.layers.0.input_layernorm.weight", filled({16}, 1.0f)}});
  auto m = load_model(v.path());
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.error().message;
  EXPECT_TRUE(starts_with(msg, "model.layers.0.input_layernorm.weight is [16] in the checkpoint (" + v.path() +
                                   "/model.safetensors); the template needs [64] (declared at " + kLlama + ":"))
      << msg;
  EXPECT_TRUE(has(msg, ", from the config)\n  read by rms_norm's weight in norm (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- norm_of (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- decoder_layer (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- step (" + kLlama + ":")) << msg;
}

// An extending template declares the norm [head_dim]: the op in the
// imported template refuses it while the graph is made; the message names
// the checkpoint's tensor, its shape, the wrong declaration in the
// extending file, then the op and its blocks.
TEST(BindWeights, WrongDeclarationInAnExtendingTemplateNamesTheTensorFirst) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llama"));
  GoldenVariant v("llama", "llama_extended", nlohmann::json::object());
  const fs::path tmpl = v.dir / "narrow.arch";
  std::ofstream(tmpl) << "family Narrow\nimport \"" ARCHETYPE_FAMILIES_DIR "/llama.arch\"\n"
                      << "weights {\n  model.layers.{i}.input_layernorm.weight: [head_dim]\n}\n";
  LoadOptions opt;
  opt.template_path = tmpl.string();
  auto m = load_model(v.path(), opt);
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.error().message;
  EXPECT_TRUE(starts_with(msg, "model.layers.0.input_layernorm.weight is [64] in the checkpoint; the template "
                               "declares [16] (" + tmpl.string() + ":4:3); rms_norm: weight [16] does not match "
                               "the last dim of x [seq, 64]\n  at rms_norm in norm (" + kLlama + ":"))
      << msg;
  EXPECT_TRUE(has(msg, ") <- norm_of (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- decoder_layer (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- step (" + kLlama + ":")) << msg;
}

// A missing tensor says which op would have read it.
TEST(BindWeights, MissingTensorSaysWhatReadsIt) {
  ARCH_REQUIRE_SHARED(testing::golden_dir("llama"));
  GoldenVariant v("llama", "llama_no_final_norm", nlohmann::json::object(), {}, {"model.norm.weight"});
  auto m = load_model(v.path());
  ASSERT_FALSE(m.ok());
  const std::string& msg = m.error().message;
  EXPECT_TRUE(starts_with(msg, v.path() + ": the checkpoint lacks tensor 'model.norm.weight', which the template "
                                          "needs (declared at " + kLlama + ":"))
      << msg;
  EXPECT_TRUE(has(msg, ")\n  read by rms_norm's weight in norm (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- final_norm (" + kLlama + ":")) << msg;
  EXPECT_TRUE(has(msg, ") <- step (" + kLlama + ":")) << msg;
}

}  // namespace
}  // namespace arch

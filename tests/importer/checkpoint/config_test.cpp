#include "importer/checkpoint/config.h"

#include <gtest/gtest.h>

#include "tests/test_files.h"

namespace arch {
namespace {

using json = nlohmann::json;
using testing::TempDir;

json normalized(json config) {
  normalize_config(config);
  return config;
}

TEST(NormalizeConfig, TorchDtypeAlsoReadsAsDtype) {
  json c = normalized({{"torch_dtype", "bfloat16"}});
  EXPECT_EQ(c["dtype"], "bfloat16");
  EXPECT_EQ(c["torch_dtype"], "bfloat16");
}

TEST(NormalizeConfig, ExistingDtypeWins) {
  json c = normalized({{"torch_dtype", "float16"}, {"dtype", "float32"}});
  EXPECT_EQ(c["dtype"], "float32");
  json null_dtype = normalized({{"torch_dtype", "float16"}, {"dtype", nullptr}});
  EXPECT_EQ(null_dtype["dtype"], "float16");
}

TEST(NormalizeConfig, DefaultRopeParametersGiveRopeThetaOnly) {
  json c = normalized({{"rope_parameters", {{"rope_theta", 500000.0}, {"rope_type", "default"}}}});
  EXPECT_EQ(c["rope_theta"], 500000.0);
  EXPECT_FALSE(c.contains("rope_scaling"));
}

TEST(NormalizeConfig, ScaledRopeParametersBecomeRopeScaling) {
  json params = {{"rope_theta", 500000.0}, {"rope_type", "llama3"}, {"factor", 8.0},
                 {"low_freq_factor", 1.0}, {"high_freq_factor", 4.0},
                 {"original_max_position_embeddings", 8192}};
  json c = normalized({{"rope_parameters", params}, {"rope_scaling", nullptr}});
  EXPECT_EQ(c["rope_theta"], 500000.0);
  EXPECT_EQ(c["rope_scaling"], params);
  EXPECT_EQ(c["rope_scaling"]["factor"], 8.0);
  EXPECT_EQ(c["rope_parameters"], params) << "the original stays readable";
}

TEST(NormalizeConfig, NeverOverwritesExistingValues) {
  json scaling = {{"rope_type", "linear"}, {"factor", 2.0}};
  json c = normalized({{"rope_theta", 10000.0},
                       {"rope_scaling", scaling},
                       {"rope_parameters", {{"rope_theta", 1.0}, {"rope_type", "yarn"}}}});
  EXPECT_EQ(c["rope_theta"], 10000.0);
  EXPECT_EQ(c["rope_scaling"], scaling);
}

TEST(NormalizeConfig, PerLayerTypeRopeParametersAreLeftAlone) {
  // Gemma 4 (transformers 5.x) keys rope_parameters by layer type.
  json params = {{"full_attention", {{"rope_theta", 1e6}, {"rope_type", "proportional"}}},
                 {"sliding_attention", {{"rope_theta", 1e4}, {"rope_type", "default"}}}};
  json c = normalized({{"rope_parameters", params}});
  EXPECT_FALSE(c.contains("rope_theta"));
  EXPECT_FALSE(c.contains("rope_scaling"));
  EXPECT_EQ(c["rope_parameters"], params);
}

TEST(NormalizeConfig, LeavesNullsAndOtherKeysAsTheyAre) {
  json in = {{"rope_scaling", nullptr}, {"sliding_window", nullptr}, {"hidden_size", 64}};
  EXPECT_EQ(normalized(in), in);
}

TEST(ReadConfig, ReadsAndNormalises) {
  TempDir dir;
  testing::write_file(dir / "config.json", R"({"model_type": "llama", "torch_dtype": "float16",
    "rope_parameters": {"rope_theta": 1000.0, "rope_type": "default"}})");
  auto c = read_config(dir / "config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)["model_type"], "llama");
  EXPECT_EQ((*c)["dtype"], "float16");
  EXPECT_EQ((*c)["rope_theta"], 1000.0);
}

TEST(ReadConfig, MissingFileNamesThePath) {
  TempDir dir;
  auto c = read_config(dir / "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, dir / "config.json");
  EXPECT_CONTAINS(c.error().message, "No such file or directory");
}

TEST(ReadConfig, BadJsonGivesLineAndColumn) {
  TempDir dir;
  testing::write_file(dir / "config.json", "{\n  \"hidden_size\": 64,\n  \"vocab_size\": ,\n}\n");
  auto c = read_config(dir / "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, dir / "config.json" + ":3:17: invalid JSON");
}

TEST(ReadConfig, TopLevelMustBeAnObject) {
  TempDir dir;
  testing::write_file(dir / "config.json", "[1, 2]");
  auto c = read_config(dir / "config.json");
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, "config.json: expected a JSON object at the top level, found array");
}

TEST(ReadConfig, GoldenTransformers447ConfigReadsTorchDtypeAsDtype) {
  REQUIRE_SHARED_DIR();
  auto c = read_config(ARCHETYPE_SHARED_DIR "/golden/llama_tf447/config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)["torch_dtype"], "float32");
  EXPECT_EQ((*c)["dtype"], "float32");
  EXPECT_EQ((*c)["transformers_version"], "4.47.0.dev0");
  EXPECT_TRUE((*c)["rope_scaling"].is_null());
  EXPECT_EQ((*c)["rope_theta"], 10000.0);
}

TEST(ReadConfig, GoldenGemma4ConfigKeepsPerLayerRopeParameters) {
  REQUIRE_SHARED_DIR();
  auto c = read_config(ARCHETYPE_SHARED_DIR "/golden/gemma4_text/config.json");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ((*c)["rope_parameters"]["full_attention"]["rope_type"], "proportional");
  EXPECT_EQ((*c)["rope_parameters"]["sliding_attention"]["rope_theta"], 10000.0);
}

}  // namespace
}  // namespace arch

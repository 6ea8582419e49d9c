#include "importer/checkpoint/toy_checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>

#include "importer/checkpoint/checkpoint.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

// Mean and standard deviation of a float tensor's values.
std::pair<double, double> moments(const Tensor& t) {
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < t.numel(); ++i) sum += t.f32()[i], sq += double(t.f32()[i]) * t.f32()[i];
  double mean = sum / t.numel();
  return {mean, std::sqrt(sq / t.numel() - mean * mean)};
}

TEST(ToyCheckpoint, WritesAHuggingFaceLlamaCheckpoint) {
  TempDir dir;
  ASSERT_TRUE(write_toy_checkpoint(dir / "toy").ok());
  auto c = load_checkpoint(dir / "toy");
  ASSERT_TRUE(c.ok()) << c.error().message;

  const nlohmann::json& cfg = c->config;
  EXPECT_EQ(cfg["model_type"], "llama");
  EXPECT_EQ(cfg["architectures"], nlohmann::json::array({"LlamaForCausalLM"}));
  EXPECT_EQ(cfg["vocab_size"], 256);
  EXPECT_EQ(cfg["hidden_size"], 64);
  EXPECT_EQ(cfg["num_hidden_layers"], 2);
  EXPECT_EQ(cfg["num_attention_heads"], 4);
  EXPECT_EQ(cfg["num_key_value_heads"], 2);
  EXPECT_EQ(cfg["head_dim"], 16);
  EXPECT_EQ(cfg["intermediate_size"], 128);
  EXPECT_EQ(cfg["max_position_embeddings"], 256);
  EXPECT_EQ(cfg["rms_norm_eps"], 1e-5);
  EXPECT_EQ(cfg["rope_theta"], 10000.0);
  EXPECT_EQ(cfg["hidden_act"], "silu");
  EXPECT_EQ(cfg["tie_word_embeddings"], false);
  EXPECT_EQ(cfg["attention_bias"], false);
  EXPECT_EQ(cfg["mlp_bias"], false);
  EXPECT_EQ(cfg["bos_token_id"], 1);
  EXPECT_EQ(cfg["eos_token_id"], 2);
  EXPECT_EQ(cfg["dtype"], "float32");

  std::map<std::string, Dims> expected = {
      {"model.embed_tokens.weight", {256, 64}}, {"model.norm.weight", {64}}, {"lm_head.weight", {256, 64}}};
  for (int i = 0; i < 2; ++i) {
    std::string L = "model.layers." + std::to_string(i) + ".";
    expected[L + "input_layernorm.weight"] = {64};
    expected[L + "self_attn.q_proj.weight"] = {64, 64};
    expected[L + "self_attn.k_proj.weight"] = {32, 64};
    expected[L + "self_attn.v_proj.weight"] = {32, 64};
    expected[L + "self_attn.o_proj.weight"] = {64, 64};
    expected[L + "post_attention_layernorm.weight"] = {64};
    expected[L + "mlp.gate_proj.weight"] = {128, 64};
    expected[L + "mlp.up_proj.weight"] = {128, 64};
    expected[L + "mlp.down_proj.weight"] = {64, 128};
  }
  ASSERT_EQ(c->tensors.size(), expected.size());
  for (const auto& [name, shape] : expected) {
    const Tensor* t = c->find(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->shape, shape) << name;
    EXPECT_EQ(t->dtype, DType::F32) << name;
  }
}

TEST(ToyCheckpoint, WeightsFollowTheirInitialisation) {
  TempDir dir;
  ASSERT_TRUE(write_toy_checkpoint(dir.path(), 7).ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  auto [embed_mean, embed_std] = moments(*c->find("model.embed_tokens.weight"));  // N(0, 1), 16384 draws
  EXPECT_NEAR(embed_mean, 0.0, 0.03);
  EXPECT_NEAR(embed_std, 1.0, 0.03);
  auto [down_mean, down_std] = moments(*c->find("model.layers.1.mlp.down_proj.weight"));  // N(0, 1/sqrt(128))
  EXPECT_NEAR(down_mean, 0.0, 0.01);
  EXPECT_NEAR(down_std, 1.0 / std::sqrt(128.0), 0.005);
  auto [q_mean, q_std] = moments(*c->find("model.layers.0.self_attn.q_proj.weight"));  // N(0, 1/8)
  EXPECT_NEAR(q_mean, 0.0, 0.01);
  EXPECT_NEAR(q_std, 0.125, 0.005);
  auto [norm_mean, norm_std] = moments(*c->find("model.norm.weight"));  // 1 + N(0, 0.1), 64 draws
  EXPECT_NEAR(norm_mean, 1.0, 0.05);
  EXPECT_NEAR(norm_std, 0.1, 0.03);
}

TEST(ToyCheckpoint, SameSeedSameBytesOtherSeedOtherBytes) {
  TempDir dir;
  ASSERT_TRUE(write_toy_checkpoint(dir / "a", 0).ok());
  ASSERT_TRUE(write_toy_checkpoint(dir / "b", 0).ok());
  ASSERT_TRUE(write_toy_checkpoint(dir / "c", 1).ok());
  std::string a = testing::read_file(dir / "a/model.safetensors");
  EXPECT_GT(a.size(), 4u * 100000);
  EXPECT_EQ(a, testing::read_file(dir / "b/model.safetensors"));
  EXPECT_EQ(testing::read_file(dir / "a/config.json"), testing::read_file(dir / "b/config.json"));
  EXPECT_NE(a, testing::read_file(dir / "c/model.safetensors"));
  EXPECT_EQ(testing::read_file(dir / "a/config.json"), testing::read_file(dir / "c/config.json"));
}

TEST(ToyCheckpoint, UnwritableDirectoryIsAnError) {
  TempDir dir;
  testing::write_file(dir / "file", "x");
  auto s = write_toy_checkpoint(dir / "file/toy");
  ASSERT_FALSE(s.ok());
  EXPECT_CONTAINS(s.error().message, dir / "file/toy");
}

}  // namespace
}  // namespace arch

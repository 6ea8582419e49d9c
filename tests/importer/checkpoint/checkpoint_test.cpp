#include "importer/checkpoint/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/safetensors.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;

Tensor filled(Dims shape, float value) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = value;
  return t;
}

void write_config(const TempDir& dir) {
  testing::write_file(dir / "config.json", R"({"model_type": "llama", "hidden_size": 4})");
}

// Two shards: a holds "x" and "y", b holds "z"; the index says so.
void write_sharded(const TempDir& dir, const std::string& weight_map) {
  write_config(dir);
  ASSERT_TRUE(write_safetensors(dir / "a.safetensors", {{"x", filled({2}, 1.f)}, {"y", filled({3}, 2.f)}}).ok());
  ASSERT_TRUE(write_safetensors(dir / "b.safetensors", {{"z", filled({4}, 3.f)}}).ok());
  testing::write_file(dir / "model.safetensors.index.json",
                      R"({"metadata": {"total_size": 36}, "weight_map": )" + weight_map + "}");
}

const char* kGoodMap = R"({"x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors"})";

TEST(Checkpoint, GoldenLlamaHasHuggingFaceTensorNames) {
  REQUIRE_SHARED_DIR();
  auto c = load_checkpoint(ARCHETYPE_SHARED_DIR "/golden/llama");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->config["model_type"], "llama");
  EXPECT_EQ(c->config["num_hidden_layers"], 2);
  const Tensor* embed = c->find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->shape, (Dims{512, 64}));
  EXPECT_EQ(embed->dtype, DType::F32);
  for (int i = 0; i < 2; ++i) {
    std::string L = "model.layers." + std::to_string(i) + ".";
    for (const char* w : {"input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                          "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                          "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight"})
      EXPECT_TRUE(c->has(L + w)) << L + w;
  }
  EXPECT_FALSE(c->has("model.layers.2.input_layernorm.weight"));
  EXPECT_TRUE(c->has("model.norm.weight"));
  EXPECT_EQ(c->find("model.layers.0.self_attn.k_proj.weight")->shape, (Dims{32, 64}));  // 2 KV heads x 16
  EXPECT_EQ(c->find("nope"), nullptr);
  EXPECT_CONTAINS(c->tensor_file.at("model.norm.weight"), "golden/llama/model.safetensors");
  // Every weight is finite and not all zero: real data, not a hole.
  Tensor norm = to_f32(*c->find("model.norm.weight"));
  float sum = 0;
  for (int64_t i = 0; i < norm.numel(); ++i) sum += norm.f32()[i];
  EXPECT_GT(sum, 32.f);  // norm weights are 1 + N(0, 0.1)
}

TEST(Checkpoint, GoldenLlamaBf16HasBf16Tensors) {
  REQUIRE_SHARED_DIR();
  auto c = load_checkpoint(ARCHETYPE_SHARED_DIR "/golden/llama_bf16");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_FALSE(c->tensors.empty());
  for (const auto& [name, t] : c->tensors) EXPECT_EQ(t.dtype, DType::BF16) << name;
  EXPECT_EQ(c->find("model.embed_tokens.weight")->shape, (Dims{512, 64}));
  EXPECT_EQ(c->config["dtype"], "bfloat16");
}

TEST(Checkpoint, ShardedCheckpointLoadsEveryShard) {
  TempDir dir;
  write_sharded(dir, kGoodMap);
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tensors.size(), 3u);
  EXPECT_EQ(c->find("y")->shape, Dims{3});
  EXPECT_EQ(c->find("z")->f32()[3], 3.f);
  EXPECT_EQ(c->tensor_file.at("x"), dir / "a.safetensors");
  EXPECT_EQ(c->tensor_file.at("z"), dir / "b.safetensors");
  EXPECT_EQ(c->config["hidden_size"], 4);
}

TEST(Checkpoint, MissingShardIsNamed) {
  TempDir dir;
  write_sharded(dir, R"({"x": "a.safetensors", "z": "c.safetensors"})");
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, "model.safetensors.index.json: shard 'c.safetensors'");
  EXPECT_CONTAINS(c.error().message, "tensor 'z'");
  EXPECT_CONTAINS(c.error().message, "is missing");
}

TEST(Checkpoint, TensorMissingFromItsShardIsNamed) {
  TempDir dir;
  write_sharded(dir, R"({"x": "a.safetensors", "y": "b.safetensors", "z": "b.safetensors"})");
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message,
                  "tensor 'y' is mapped to shard 'b.safetensors', but that file does not contain it");
  EXPECT_CONTAINS(c.error().message, "(it is in " + dir / "a.safetensors" + ")");

  write_sharded(dir, R"({"x": "a.safetensors", "w": "b.safetensors"})");
  auto absent = load_checkpoint(dir.path());
  ASSERT_FALSE(absent.ok());
  EXPECT_CONTAINS(absent.error().message, "tensor 'w' is mapped to shard 'b.safetensors'");
}

TEST(Checkpoint, TensorInTwoShardsIsAnError) {
  TempDir dir;
  write_sharded(dir, kGoodMap);
  ASSERT_TRUE(write_safetensors(dir / "b.safetensors", {{"z", filled({4}, 3.f)}, {"x", filled({2}, 9.f)}}).ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, "tensor 'x' is defined in two shards");
  EXPECT_CONTAINS(c.error().message, "a.safetensors");
  EXPECT_CONTAINS(c.error().message, "b.safetensors");
}

TEST(Checkpoint, MalformedIndexIsAnError) {
  TempDir dir;
  write_sharded(dir, R"(["a.safetensors"])");
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, "model.safetensors.index.json: expected an object with a \"weight_map\"");

  write_sharded(dir, R"({"x": 3})");
  auto bad_name = load_checkpoint(dir.path());
  ASSERT_FALSE(bad_name.ok());
  EXPECT_CONTAINS(bad_name.error().message, "tensor 'x' maps to integer");

  write_sharded(dir, R"({"x": "../a.safetensors"})");
  auto escapes = load_checkpoint(dir.path());
  ASSERT_FALSE(escapes.ok());
  EXPECT_CONTAINS(escapes.error().message, "expected a file name inside the checkpoint directory");
}

TEST(Checkpoint, BrokenShardErrorNamesTheShard) {
  TempDir dir;
  write_sharded(dir, kGoodMap);
  testing::write_file(dir / "b.safetensors", "tiny");
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, dir / "b.safetensors" + ": truncated");
}

TEST(Checkpoint, SingleOtherSafetensorsFileIsUsed) {
  TempDir dir;
  write_config(dir);
  ASSERT_TRUE(write_safetensors(dir / "weights.safetensors", {{"w", filled({2, 2}, 0.5f)}}).ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->find("w")->shape, (Dims{2, 2}));
}

TEST(Checkpoint, NoWeightsIsAClearError) {
  TempDir dir;
  write_config(dir);
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, "no weights found in " + dir.path() +
                                   " (expected model.safetensors, model.safetensors.index.json, pytorch_model.bin "
                                   "or pytorch_model.bin.index.json)");
}

// transformers' Trainer saves its state beside the weights as torch files:
// none of them is taken for the weights.
TEST(Checkpoint, ATrainersStateIsNotTakenForTheWeights) {
  TempDir dir;
  write_config(dir);
  for (const char* name : {"training_args.bin", "optimizer.pt", "scheduler.pt", "rng_state.pth"})
    testing::write_file(dir / name, "not weights");
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, "no weights found in " + dir.path());
}

TEST(Checkpoint, SeveralUnnamedSafetensorsFilesAreNotGuessed) {
  TempDir dir;
  write_config(dir);
  ASSERT_TRUE(write_safetensors(dir / "one.safetensors", {{"w", filled({1}, 0.f)}}).ok());
  ASSERT_TRUE(write_safetensors(dir / "two.safetensors", {{"w", filled({1}, 0.f)}}).ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, "no weights found in " + dir.path());
  EXPECT_CONTAINS(c.error().message, "one.safetensors, two.safetensors");
}

TEST(Checkpoint, DiffusersWeightFileIsFound) {
  TempDir dir;
  write_config(dir);
  ASSERT_TRUE(write_safetensors(dir / "diffusion_pytorch_model.safetensors", {{"conv_in.weight", filled({1}, 1.f)}}).ok());
  ASSERT_TRUE(write_safetensors(dir / "inputs.safetensors", {{"sample", filled({1}, 1.f)}}).ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->has("conv_in.weight"));
  EXPECT_FALSE(c->has("sample"));
}

TEST(Checkpoint, MissingDirectoryOrFileInsteadOfDirectory) {
  TempDir dir;
  auto missing = load_checkpoint(dir / "absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir / "absent" + ": checkpoint directory does not exist");
  testing::write_file(dir / "file", "x");
  auto file = load_checkpoint(dir / "file");
  ASSERT_FALSE(file.ok());
  EXPECT_CONTAINS(file.error().message, "not a directory");
}

// A canonical model cut short says what is wrong with it, not that it is
// no directory; a safetensors file import did not write says so.
// A canonical model is read back by its .safetensors name: import refuses
// to write one under another name, which no command would open.
TEST(Checkpoint, ImportRefusesAnOutputNotNamedSafetensors) {
  TempDir dir;
  ASSERT_TRUE(write_toy_checkpoint(dir / "toy", 0).ok());
  for (const char* name : {"model.bin", "model"}) {
    auto report = import_checkpoint(dir / "toy", dir / name, ImportType::AsStored);
    ASSERT_FALSE(report.ok()) << name;
    EXPECT_CONTAINS(report.error().message, dir / name + ": a canonical model's file name ends in .safetensors");
    EXPECT_FALSE(std::filesystem::exists(dir / name)) << name;
  }
}

TEST(Checkpoint, ATruncatedCanonicalModelNamesItsFault) {
  TempDir dir;
  ASSERT_TRUE(write_toy_checkpoint(dir / "toy", 0).ok());
  auto report = import_checkpoint(dir / "toy", dir / "whole.safetensors", ImportType::AsStored);
  ASSERT_TRUE(report.ok()) << report.error().message;
  const std::string bytes = testing::read_file(dir / "whole.safetensors");
  testing::write_file(dir / "cut.safetensors", bytes.substr(0, bytes.size() / 2));
  auto cut = load_checkpoint(dir / "cut.safetensors");
  ASSERT_FALSE(cut.ok());
  EXPECT_CONTAINS(cut.error().message, dir / "cut.safetensors" + ": tensor '");
  EXPECT_CONTAINS(cut.error().message, "run past the end of the data section");
  EXPECT_EQ(cut.error().message.find("not a directory"), std::string::npos);
  auto plain = load_checkpoint(dir / "toy/model.safetensors");
  ASSERT_FALSE(plain.ok());
  EXPECT_CONTAINS(plain.error().message, "a safetensors file that archrun import did not write");
}

// Found by fuzz_canonical_model: archetype.quantized entries that do not
// describe the stored bytes are refused by name, including shapes whose
// rows x row bytes overflow to the stored size (2^62 rows over 0 bytes) and
// a metadata value that is not an object.
TEST(Checkpoint, ACanonicalModelsQuantizedEntriesMustFitTheirBytes) {
  TempDir dir;
  const std::string path = dir / "q.safetensors";
  auto load_with = [&](const std::string& quantized, Tensor stored) {
    EXPECT_TRUE(write_safetensors(path, {{"w", stored}},
                                  {{"format", "archetype"}, {"file:config.json", R"({"model_type":"llama"})"},
                                   {"archetype.quantized", quantized}})
                    .ok());
    return load_canonical(path);
  };
  // A good entry: 2 rows of 32 Q8_0 values, 34 bytes a row.
  auto good = load_with(R"({"w":{"dtype":"Q8_0","shape":[2,32]}})", Tensor::zeros(DType::U8, {68}));
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->tensors.at("w").dtype, DType::Q8_0);
  EXPECT_EQ(good->tensors.at("w").shape, (Dims{2, 32}));
  for (const char* bad : {R"({"w":{"dtype":"Q8_0","shape":[4611686018427387904,32]}})",
                          R"({"w":{"dtype":"Q8_0","shape":[-2,32]}})", R"({"w":{"dtype":"Q8_0","shape":[2,"32"]}})",
                          R"({"w":{"dtype":"Q8_0","shape":[18446744073709551615,32]}})",
                          R"({"w":{"dtype":"F32","shape":[2,32]}})", R"({"w":{"dtype":"Q8_0","shape":[2,33]}})",
                          R"({"w":[1,2]})"}) {
    auto r = load_with(bad, Tensor::zeros(DType::U8, {68}));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_CONTAINS(r.error().message, "tensor 'w': its quantization entry");
    EXPECT_CONTAINS(r.error().message, "does not fit the stored U8[68]");
  }
  // 2^62 rows x 68 bytes wraps to 0 mod 2^64: over no bytes, still refused.
  auto wraps = load_with(R"({"w":{"dtype":"Q8_0","shape":[4611686018427387904,64]}})", Tensor::zeros(DType::U8, {0}));
  ASSERT_FALSE(wraps.ok());
  EXPECT_CONTAINS(wraps.error().message, "its quantization entry");
  auto not_object = load_with("[1]", Tensor::zeros(DType::U8, {68}));
  ASSERT_FALSE(not_object.ok());
  EXPECT_CONTAINS(not_object.error().message, "metadata archetype.quantized is array, expected an object");
}

TEST(Checkpoint, MissingConfigIsNamed) {
  TempDir dir;
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", {{"w", filled({1}, 0.f)}}).ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_CONTAINS(c.error().message, dir / "config.json" + ": cannot open: No such file or directory");
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// save_model's aliases: a name in __metadata__ whose value is a stored
// tensor reads that tensor's bytes; plain metadata ("format") and an alias
// of a missing tensor stay metadata; a stored name is never overridden.
TEST(Checkpoint, MetadataAliasesNameTheStoredTensor) {
  testing::TempDir dir;
  write_config(dir);
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", {{"lm_head.weight", filled({2, 3}, 7.f)}, {"b", filled({2}, 1.f)}},
                                {{"format", "pt"},
                                 {"model.embed_tokens.weight", "lm_head.weight"},
                                 {"b", "lm_head.weight"},
                                 {"ghost", "missing.weight"}})
                  .ok());
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Tensor* embed = c->find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->data, c->find("lm_head.weight")->data);  // the same bytes, not a copy
  EXPECT_EQ(embed->shape, (Dims{2, 3}));
  EXPECT_CONTAINS(c->tensor_file.at("model.embed_tokens.weight"), "as 'lm_head.weight', its __metadata__ alias");
  EXPECT_EQ(c->find("b")->shape, (Dims{2}));  // stored: the alias does not replace it
  EXPECT_FALSE(c->has("ghost"));
  EXPECT_FALSE(c->has("format"));
}

}  // namespace
}  // namespace arch

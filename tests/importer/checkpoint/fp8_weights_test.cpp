// FP8 checkpoints through load_checkpoint: the matrices arrive as floats,
// their scales and the quantization_config consumed, and every fault named
// with its file and tensor.
#include "importer/checkpoint/fp8_weights.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/fp8.h"
#include "importer/checkpoint/canonical.h"
#include "importer/checkpoint/fp8_blocks.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::TempDir;
using Named = std::vector<std::pair<std::string, Tensor>>;

const char* kFp8Config = R"({"model_type": "llama", "hidden_size": 4, "quantization_config": {"quant_method": "fp8",
    "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [2, 2]}})";

Tensor codes(Dims shape) {
  Tensor t = Tensor::zeros(DType::F8_E4M3, std::move(shape));
  auto* c = static_cast<uint8_t*>(t.data);
  for (int64_t i = 0; i < t.numel(); ++i) c[i] = uint8_t(0x30 + i % 16) | (i % 3 ? 0 : 0x80);  // 0.5 .. 1.875, some negative
  return t;
}

Tensor filled(DType dtype, Dims shape, float first) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = first + 0.5f * float(i);
  return convert_to(t, dtype);
}

// A 3 x 5 matrix in 2 x 2 blocks (scales [2, 3]) beside a norm.
Named fp8_tensors(DType others = DType::F32) {
  return {{"a.weight", codes({3, 5})}, {"a.weight_scale_inv", filled(DType::F32, {2, 3}, 0.25f)},
          {"norm.weight", filled(others, {5}, 1.f)}};
}

void write_dir(const TempDir& dir, const Named& tensors, const std::string& config = kFp8Config) {
  testing::write_file(dir / "config.json", config);
  ASSERT_TRUE(write_safetensors(dir / "model.safetensors", tensors).ok());
}

TEST(Fp8Weights, MatricesLoadAsFloatsAndTheirScalesAreConsumed) {
  TempDir dir;
  Named t = fp8_tensors();
  write_dir(dir, t);
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_FALSE(c->has("a.weight_scale_inv"));
  EXPECT_EQ(c->tensor_file.count("a.weight_scale_inv"), 0u);
  EXPECT_EQ(c->tensors.size(), 2u);
  EXPECT_FALSE(c->config.contains("quantization_config"));  // read: the weights are floats now
  EXPECT_EQ(c->config["hidden_size"], 4);
  const Tensor* a = c->find("a.weight");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->dtype, DType::F32);
  ASSERT_EQ(a->shape, (Dims{3, 5}));
  const Tensor& x = t[0].second;
  const Tensor& s = t[1].second;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t col = 0; col < 5; ++col)
      EXPECT_EQ(a->f32()[r * 5 + col],
                f8e4m3_to_f32(static_cast<const uint8_t*>(x.data)[r * 5 + col]) * s.f32()[(r / 2) * 3 + col / 2]);
  EXPECT_EQ(c->find("norm.weight")->dtype, DType::F32);
  EXPECT_EQ(c->find("norm.weight")->f32()[1], 1.5f);
}

// DeepSeek-V3 keeps embeddings and norms in BF16: its matrices become BF16.
TEST(Fp8Weights, BesideBF16TheyBecomeBF16) {
  TempDir dir;
  Named t = fp8_tensors(DType::BF16);
  write_dir(dir, t);
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Tensor* a = c->find("a.weight");
  ASSERT_EQ(a->dtype, DType::BF16);
  const float want = f8e4m3_to_f32(static_cast<const uint8_t*>(t[0].second.data)[14]) * t[1].second.f32()[5];
  EXPECT_EQ(static_cast<const uint16_t*>(a->data)[14], f32_to_bf16(want));
}

TEST(Fp8Weights, WithoutQuantizationConfigBlocksAre128) {
  TempDir dir;
  Tensor x = codes({130, 3});
  write_dir(dir, {{"a.weight", x}, {"a.weight_scale_inv", filled(DType::F32, {2, 1}, 1.f)}}, R"({"model_type": "llama"})");
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  const Tensor* a = c->find("a.weight");
  const auto* code = static_cast<const uint8_t*>(x.data);
  EXPECT_EQ(a->f32()[127 * 3 + 2], f8e4m3_to_f32(code[127 * 3 + 2]) * 1.f);  // rows 0-127: scale 1
  EXPECT_EQ(a->f32()[128 * 3], f8e4m3_to_f32(code[128 * 3]) * 1.5f);        // rows 128-129: 1.5
}

// The scales may sit in another shard than their matrix; messages name it.
TEST(Fp8Weights, ScalesInAnotherShard) {
  TempDir dir;
  testing::write_file(dir / "config.json", kFp8Config);
  ASSERT_TRUE(write_safetensors(dir / "a.safetensors", {{"a.weight", codes({3, 5})}}).ok());
  ASSERT_TRUE(write_safetensors(dir / "b.safetensors", {{"a.weight_scale_inv", filled(DType::F32, {2, 2}, 1.f)}}).ok());
  testing::write_file(dir / "model.safetensors.index.json",
                      R"({"weight_map": {"a.weight": "a.safetensors", "a.weight_scale_inv": "b.safetensors"}})");
  auto c = load_checkpoint(dir.path());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, dir / "b.safetensors" +
                                   ": tensor 'a.weight_scale_inv' has shape [2, 2], but the F8_E4M3[3, 5] it scales, "
                                   "in blocks of 2 x 2, needs [2, 3]");
  ASSERT_TRUE(write_safetensors(dir / "b.safetensors", {{"a.weight_scale_inv", filled(DType::F32, {2, 3}, 1.f)}}).ok());
  auto good = load_checkpoint(dir.path());
  ASSERT_TRUE(good.ok()) << good.error().message;
  EXPECT_EQ(good->tensors.size(), 1u);
}

TEST(Fp8Weights, FaultsAreNamedWithFileAndTensor) {
  TempDir dir;
  const std::string file = dir / "model.safetensors";
  write_dir(dir, {{"a.weight", codes({3, 5})}});
  auto missing = load_checkpoint(dir.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, file + ": tensor 'a.weight' is F8_E4M3[3, 5], whose codes mean nothing without "
                                            "their block scales, but there is no tensor 'a.weight_scale_inv' beside it");

  // Another method's FP8 (per-channel weight_scale) is refused by its name,
  // with block scales beside it or not.
  for (const char* scale : {"a.weight_scale", "a.weight_scale_inv"}) {
    write_dir(dir, {{"a.weight", codes({3, 5})}, {scale, filled(DType::F32, {1, 1}, 1.f)}},
              R"({"quantization_config": {"quant_method": "fbgemm_fp8"}})");
    auto other = load_checkpoint(dir.path());
    ASSERT_FALSE(other.ok()) << scale;
    EXPECT_EQ(other.error().message, dir.path() + ": config.json: quantization_config.quant_method is 'fbgemm_fp8' "
                                                  "over FP8 tensors ('a.weight', ...); what loads is block-scaled FP8 "
                                                  "as DeepSeek-V3 stores it, quant_method 'fp8'");
  }

  Named nan = fp8_tensors();
  static_cast<uint8_t*>(nan[0].second.data)[7] = 0x7f;
  write_dir(dir, nan);
  auto n = load_checkpoint(dir.path());
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.error().message,
            file + ": tensor 'a.weight' holds NaN at index 7 (element [1, 2] of [3, 5]; 1 of 15 values are NaN or Inf): "
                   "FP8 weights must be all numbers");

  Named inf = fp8_tensors();
  inf[1].second.f32()[4] = INFINITY;
  write_dir(dir, inf);
  auto i = load_checkpoint(dir.path());
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.error().message,
            file + ": tensor 'a.weight_scale_inv' holds inf at block [1, 1] of [2, 3]: a block scale must be a finite number");

  // Scales beside a tensor that is not FP8: what it holds is unclear.
  write_dir(dir, {{"a.weight", filled(DType::BF16, {3, 5}, 1.f)}, {"a.weight_scale_inv", filled(DType::F32, {2, 3}, 1.f)}});
  auto stray = load_checkpoint(dir.path());
  ASSERT_FALSE(stray.ok());
  EXPECT_EQ(stray.error().message, file + ": tensor 'a.weight_scale_inv' holds block scales for 'a.weight', which is "
                                          "BF16, not FP8: what its values mean would be a guess");

  Named bad_config = fp8_tensors();
  write_dir(dir, bad_config, R"({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128]}})");
  auto b = load_checkpoint(dir.path());
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message, dir.path() + ": config.json: quantization_config.weight_block_size [128] must be two "
                                            "positive integers [rows, cols]");
}

// A checkpoint without FP8 is left alone, its config included.
TEST(Fp8Weights, OtherCheckpointsAreUntouched) {
  TempDir dir;
  write_dir(dir, {{"w", filled(DType::F32, {2, 2}, 1.f)}, {"orphan_scale_inv", filled(DType::F32, {1}, 1.f)}});
  auto c = load_checkpoint(dir.path());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_TRUE(c->config.contains("quantization_config"));
  EXPECT_TRUE(c->has("orphan_scale_inv"));  // scales nothing: an unused tensor like any other
}

// Import reads through load_checkpoint: the canonical model holds floats
// and no scales; a canonical file holding FP8 itself is read the same way.
TEST(Fp8Weights, ImportWritesFloatsAndCanonicalFilesDequantizeToo) {
  TempDir dir;
  write_dir(dir, fp8_tensors());
  auto report = import_checkpoint(dir.path(), dir / "out.safetensors", ImportType::AsStored);
  ASSERT_TRUE(report.ok()) << report.error().message;
  auto stored = read_safetensors(dir / "out.safetensors");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->tensors.at("a.weight").dtype, DType::F32);
  EXPECT_EQ(stored->tensors.count("a.weight_scale_inv"), 0u);

  ASSERT_TRUE(write_safetensors(dir / "fp8.safetensors", fp8_tensors(),
                                {{"format", "archetype"}, {"file:config.json", kFp8Config}})
                  .ok());
  auto c = load_checkpoint(dir / "fp8.safetensors");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->find("a.weight")->dtype, DType::F32);
  EXPECT_FALSE(c->has("a.weight_scale_inv"));
  EXPECT_EQ(c->find("a.weight")->f32()[0], -0.5f * 0.25f);  // code 0xb0 times the first block's scale
}

}  // namespace
}  // namespace arch

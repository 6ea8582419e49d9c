// Decoder goldens re-stored as DeepSeek-V3 stores its weights: every
// projection (and expert) matrix F8_E4M3 with float32 block scales
// `<name>_scale_inv` in 128 x 128 blocks, embeddings, norms, routers and the
// head as they were, and config.json given DeepSeek-V3's quantization_config.
// Loaded and run, the logits must
//   - equal, bit for bit, those of a plain checkpoint holding the
//     dequantized values (decoded here from the format's definition, apart
//     from the loader): the same engine on the same numbers, so the load is
//     exact and nothing else than FP8's rounding moves the logits;
//   - move from transformers' no more than the same golden's with every
//     quantized weight moved by exactly 2^-4 of itself, up or down at random:
//     a sanity check, not a bound (one random draw bounds no other). Rounding
//     to nearest e4m3fn moves a weight by at most 2^-4 of itself and by about
//     0.4 of that in RMS, so FP8 lands well inside (measured 0.37 to 0.48 of
//     the nudge's error); that each code is the nearest one is held exactly
//     by Fp8Blocks.QuantizingTakesEachBlocksMaximumAndTheNearestCode.
// These random-weight models are touchy: FP8 moves their logits by 10-46%
// of max|logit| (q8 by 2-27%, quantized_golden_test.cpp), the nudge by 25-97%.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/core/fp8.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/fp8_blocks.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::golden_dir;
using testing::read_json;
using Named = std::vector<std::pair<std::string, Tensor>>;

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// What DeepSeek-V3 stores as FP8: the linear layers' matrices (attention
// and MLP projections, experts), not embeddings, norms, routers or the head.
bool stored_as_fp8(const std::string& name, const Tensor& t) {
  if (t.shape.size() != 2) return false;
  for (const char* end : {"_proj.weight", ".w1.weight", ".w2.weight", ".w3.weight"})
    if (ends_with(name, end)) return true;
  return false;
}

// e4m3fn by its definition (bias 7, 3 mantissa bits), not the loader's decoder.
float e4m3(uint8_t code) {
  const int e = (code >> 3) & 0xf, m = code & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, 1 - 7) : std::ldexp(1.0 + m / 8.0, e - 7);
  return float((code & 0x80) ? -mag : mag);
}

// The values an FP8 matrix and its scales mean, in `dtype` (F32 or BF16).
Tensor dequantized(const Fp8Matrix& m, DType dtype) {
  Tensor out = Tensor::zeros(DType::F32, m.values.shape);
  const int64_t rows = out.shape[0], cols = out.shape[1], scale_cols = m.scale_inv.shape[1];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      out.f32()[r * cols + c] = e4m3(static_cast<const uint8_t*>(m.values.data)[r * cols + c]) *
                                m.scale_inv.f32()[(r / 128) * scale_cols + c / 128];
  return convert_to(out, dtype);
}

// Each quantized weight moved by exactly 2^-4 of itself, up or down at
// random: the most FP8's rounding moves a weight (in the normal range).
Tensor nudged(const Tensor& t, std::mt19937& rng) {
  Tensor f = to_f32(t);
  for (int64_t i = 0; i < f.numel(); ++i) f.f32()[i] *= (rng() & 1) ? 1.f + 1.f / 16 : 1.f - 1.f / 16;
  return convert_to(f, t.dtype);
}

struct Restored {
  std::string fp8, dequantized, nudged;  // checkpoint directories
  int matrices = 0;
};

void write_config(const std::string& dir, nlohmann::json config) {
  testing::write_file(dir + "/config.json", config.dump(2));
}

// The golden's weights three ways: FP8 with scales, the values that FP8
// means, and each quantized weight nudged by 2^-4.
Restored restore(const std::string& golden, const testing::TempDir& tmp) {
  Restored out{tmp / "fp8", tmp / "dequantized", tmp / "nudged"};
  for (const auto& d : {out.fp8, out.dequantized, out.nudged}) std::filesystem::create_directories(d);
  auto weights = read_safetensors(golden + "/model.safetensors");
  EXPECT_TRUE(weights.ok()) << weights.error().message;
  if (!weights.ok()) return out;
  Named fp8, plain, moved;
  std::mt19937 rng(46);
  for (const auto& [name, t] : weights->tensors) {
    if (!stored_as_fp8(name, t)) {
      fp8.emplace_back(name, t), plain.emplace_back(name, t), moved.emplace_back(name, t);
      continue;
    }
    auto m = quantize_fp8(t, {}, name);
    EXPECT_TRUE(m.ok()) << m.error().message;
    if (!m.ok()) return out;
    fp8.emplace_back(name, m->values);
    fp8.emplace_back(name + "_scale_inv", m->scale_inv);
    plain.emplace_back(name, dequantized(*m, t.dtype));
    moved.emplace_back(name, nudged(t, rng));
    ++out.matrices;
  }
  nlohmann::json config = read_json(golden + "/config.json");
  write_config(out.dequantized, config);
  write_config(out.nudged, config);
  config["quantization_config"] = {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"},
                                   {"weight_block_size", {128, 128}}};
  write_config(out.fp8, config);
  EXPECT_TRUE(write_safetensors(out.fp8 + "/model.safetensors", fp8).ok());
  EXPECT_TRUE(write_safetensors(out.dequantized + "/model.safetensors", plain).ok());
  EXPECT_TRUE(write_safetensors(out.nudged + "/model.safetensors", moved).ok());
  return out;
}

// The prompt's logits of the model at `dir`.
Tensor logits(const std::string& dir, const std::vector<int32_t>& ids, std::shared_ptr<Model>* keep = nullptr) {
  auto model = load_model(dir);
  EXPECT_TRUE(model.ok()) << (model.ok() ? "" : model.error().message);
  if (!model.ok()) return {};
  Session s(**model, int64_t(ids.size()));
  auto outs = s.step(ids);
  EXPECT_TRUE(outs.ok()) << (outs.ok() ? "" : outs.error().message);
  if (!outs.ok()) return {};
  if (keep) *keep = *model;
  return outs->at("logits");
}

int64_t argmax(const float* row, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (row[i] > row[best]) best = i;
  return best;
}

class Fp8Golden : public ::testing::TestWithParam<const char*> {};

TEST_P(Fp8Golden, LogitsStayWithinWhatFp8RoundingExplains) {
  const std::string golden = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(golden);
  testing::TempDir tmp;
  Restored r = restore(golden, tmp);
  ASSERT_GT(r.matrices, 0);
  auto ids = read_json(golden + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  auto expected = read_safetensors(golden + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& ref = expected->tensors.at("logits");

  std::shared_ptr<Model> model;
  Tensor fp8 = logits(r.fp8, ids, &model);
  Tensor plain = logits(r.dequantized, ids);
  Tensor moved = logits(r.nudged, ids);
  ASSERT_TRUE(fp8.data && plain.data && moved.data);
  ASSERT_EQ(fp8.shape, ref.shape);
  // The scales were consumed, not left over for the template.
  for (const auto& name : model->unused_tensors) EXPECT_FALSE(ends_with(name, "_scale_inv")) << name;
  for (const auto& field : model->unread_config) EXPECT_NE(field, "quantization_config");

  auto exact = testing::compare_f32(fp8.f32(), plain.f32(), ref.numel());
  auto fp8_err = testing::compare_f32(fp8.f32(), ref.f32(), ref.numel());
  auto nudge_err = testing::compare_f32(moved.f32(), ref.f32(), ref.numel());
  const int64_t vocab = ref.shape[1], rows = ref.shape[0];
  int64_t agree = 0;
  for (int64_t p = 0; p < rows; ++p)
    agree += argmax(fp8.f32() + p * vocab, vocab) == argmax(ref.f32() + p * vocab, vocab);
  std::printf("[ fp8       ] %-10s %2d matrices FP8: logit error %.4f of max|logit| (every weight moved by "
              "2^-4: %.4f), top-1 %lld/%lld; vs the dequantized checkpoint %.1e\n",
              GetParam(), r.matrices, fp8_err.max_abs / fp8_err.ref_max, nudge_err.max_abs / nudge_err.ref_max,
              (long long)agree, (long long)rows, exact.max_abs / exact.ref_max);
  EXPECT_EQ(exact.max_abs, 0.0) << "FP8 vs the dequantized checkpoint: the load is not exact";
  EXPECT_GT(fp8_err.max_abs, 0.0);  // the weights did round
  EXPECT_LE(fp8_err.max_abs, nudge_err.max_abs) << "FP8 moved the logits more than every weight moved by 2^-4";
}

INSTANTIATE_TEST_SUITE_P(Cases, Fp8Golden,
                         ::testing::Values("llama", "llama_bf16", "mistral", "qwen2", "qwen3", "mixtral", "qwen2_moe"));

}  // namespace
}  // namespace arch

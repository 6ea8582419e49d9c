// Kernel options are the model's, chosen at load: two models in one
// process, one with bf16 activations and an F16 KV cache and one without,
// each compute as loaded, however their calls interleave.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "importer/checkpoint/toy_checkpoint.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

Tensor logits_of(const Model& m, const std::vector<int32_t>& ids) {
  Session s(m, 64);
  auto prompt = s.step(std::span<const int32_t>(ids.data(), ids.size() - 1));
  EXPECT_TRUE(prompt.ok()) << prompt.error().message;
  auto step = s.step(std::span<const int32_t>(ids.data() + ids.size() - 1, 1));  // reads the cache
  EXPECT_TRUE(step.ok()) << step.error().message;
  return step.ok() ? step->at("logits") : Tensor{};
}

double max_diff(const Tensor& a, const Tensor& b) {
  double d = 0;
  for (int64_t i = 0; i < a.numel(); ++i) d = std::max(d, double(std::abs(a.f32()[i] - b.f32()[i])));
  return d;
}

TEST(ModelOptions, TwoModelsInOneProcessKeepTheirOwn) {
  fs::path dir = fs::temp_directory_path() / ("model_options_" + std::to_string(getpid()));
  LlamaShape shape;
  shape.bf16 = true;  // BF16 weights: what bf16 activations change
  ASSERT_TRUE(write_random_checkpoint(dir.string(), shape, 4).ok());
  std::vector<int32_t> ids = {3, 77, 140, 9, 201, 64, 12, 5, 33, 250, 1, 18, 99, 7, 42, 8, 120};

  auto plain = load_model(dir.string());
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  const Tensor before = logits_of(**plain, ids);  // alone in the process

  LoadOptions rounded_opt;
  rounded_opt.kernels.bf16_activations = true;
  rounded_opt.kernels.kv_f16 = true;
  auto rounded = load_model(dir.string(), rounded_opt);
  ASSERT_TRUE(rounded.ok()) << rounded.error().message;
  EXPECT_TRUE((*rounded)->kernel_options.kv_f16);
  EXPECT_FALSE((*plain)->kernel_options.kv_f16);

  // Interleaved: the plain model's logits do not move (bit for bit), the
  // other's round (its KV cache is F16 whatever the CPU) but stay close.
  const Tensor r1 = logits_of(**rounded, ids);
  const Tensor p1 = logits_of(**plain, ids);
  const Tensor r2 = logits_of(**rounded, ids);
  EXPECT_EQ(max_diff(p1, before), 0.0);
  EXPECT_EQ(max_diff(r1, r2), 0.0);
  double largest = 0;
  for (int64_t i = 0; i < before.numel(); ++i) largest = std::max(largest, double(std::abs(before.f32()[i])));
  EXPECT_GT(max_diff(r1, before), 0.0);
  EXPECT_LT(max_diff(r1, before), 0.05 * largest);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace arch

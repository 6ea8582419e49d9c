// Encoder-decoder goldens (T5, T5 v1.1, mT5, BART, mBART, Marian, M2M-100, Whisper) through forward() and generation:
// every tensor transformers stored, per layer where it is stacked, within
// the golden README's float32 rule, and the 16 greedy tokens of its
// generate() (encoder once, decoder from decoder_start_token_id), on the
// fast kernels and on the reference ones.
#include <gtest/gtest.h>

#include "importer/checkpoint/safetensors.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "tests/golden/golden_case.h"
#include "tests/golden/golden_compare.h"
#include "tools/toolkit/compare.h"

namespace arch {
namespace {

class EncoderDecoderGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(EncoderDecoderGolden, EveryTensorAndGreedyToken) {
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  testing::expect_matches_golden(dir, "", 7, "", [&](const Model& m, const CompareReport& r) {
    EXPECT_TRUE(m.is_encoder_decoder());
    EXPECT_EQ(r.want_tokens.size(), 16u);
    EXPECT_EQ(r.got_tokens, r.want_tokens) << GetParam();
  });
}

TEST_P(EncoderDecoderGolden, StepLogitsOfGenerationMatchTransformers) {
  // greedy_step_logits: the raw logits at each greedy step, made by HF's
  // generate with its caches; ours step the decoder one token at a time
  // over its KV cache and the held encoder output.
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto inputs = golden_inputs(dir);
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  inputs->erase("decoder_input_ids");
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& want = expected->tensors.at("greedy_step_logits");
  auto start = decoder_start_token(**model);
  ASSERT_TRUE(start.ok()) << start.error().message;
  Session s(**model, want.shape[0]);
  ASSERT_TRUE(s.encode(*inputs).ok());
  auto tokens = testing::read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  int32_t next = *start;
  const int64_t vocab = want.shape[1];
  std::vector<float> got;
  for (int64_t k = 0; k < want.shape[0]; ++k) {
    auto out = s.step(std::vector<int32_t>{next});
    ASSERT_TRUE(out.ok()) << out.error().message;
    got.insert(got.end(), out->at("logits").f32(), out->at("logits").f32() + vocab);
    next = tokens[size_t(k)];
  }
  // Per tensor, relative to its max |value|, as the golden README states
  // its rule, at 3x the case's own float32-vs-float64 deviation where that
  // exceeds the rule's 1e-4 (the rule's own derivation: BART's float32 run
  // strays 1.4e-4 of the tensor's max from float64, more than the rule).
  auto c = testing::compare_f32(got.data(), want.f32(), want.numel(), testing::grounded_rel(dir, "greedy_step_logits"));
  EXPECT_TRUE(c.ok()) << GetParam() << ": step " << c.worst / vocab << " differs by " << c.max_abs << " > " << c.bound;
}

INSTANTIATE_TEST_SUITE_P(Cases, EncoderDecoderGolden, ::testing::Values("t5", "t5_v11", "mt5", "bart", "mbart", "marian", "m2m_100", "whisper"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace arch

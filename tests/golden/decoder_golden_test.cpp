// Every decoder golden through the library: logits, embeddings, every
// layer's output, the final hidden state, MoE router logits, the 16 greedy
// tokens and the logits of each greedy step, against transformers' own
// outputs.
#include <gtest/gtest.h>

#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

using testing::compare_f32;
using testing::golden_dir;
using testing::read_json;

struct Case {
  const char* name;
  const char* family;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DecoderGolden : public ::testing::TestWithParam<Case> {};

std::vector<int32_t> prompt_ids(const std::string& dir) {
  return read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
}

TEST_P(DecoderGolden, PromptTensorsMatchTransformers) {
  std::string dir = golden_dir(GetParam().name);
  ARCH_REQUIRE_SHARED(dir);
  // Both paths: the fast cpu kernels (the default) and the plain reference ones.
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    LoadOptions lo;
    lo.backend = backend;
    auto model = load_model(dir, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->family, GetParam().family);
    auto expected = read_safetensors(dir + "/expected.safetensors");
    ASSERT_TRUE(expected.ok()) << expected.error().message;
    std::vector<int32_t> ids = prompt_ids(dir);
    Session s(**model, int64_t(ids.size()));
    std::vector<std::string> names = {"logits", "embeddings", "layer_outputs", "last_hidden_state"};
    bool moe = expected->tensors.count("router_logits") > 0;
    if (moe) names.push_back("router_logits");
    auto outs = s.step(ids, names);
    ASSERT_TRUE(outs.ok()) << outs.error().message;

    // Per layer first, so a wrong layer is named.
    const Tensor& layers = outs->at("layer_outputs");
    const Tensor& ref_layers = expected->tensors.at("layer_outputs");
    ASSERT_EQ(layers.shape, ref_layers.shape);
    int64_t per_layer = layers.numel() / layers.shape[0];
    for (int64_t l = 0; l < layers.shape[0]; ++l) {
      auto c = compare_f32(layers.f32() + l * per_layer, ref_layers.f32() + l * per_layer, per_layer);
      EXPECT_TRUE(c.ok()) << GetParam().name << ": layer " << l << " output differs by " << c.max_abs
                          << " (allowed " << c.bound << ", worst element " << c.worst << ")";
    }
    for (const auto& name : names) {
      if (name == "layer_outputs") continue;
      const Tensor& out = outs->at(name);
      const Tensor& ref = expected->tensors.at(name);
      ASSERT_EQ(out.shape, ref.shape) << name;
      auto c = compare_f32(out.f32(), ref.f32(), ref.numel());
      EXPECT_TRUE(c.ok()) << GetParam().name << ": " << name << " differs by " << c.max_abs << " (allowed "
                          << c.bound << ")";
    }
  }
}

TEST_P(DecoderGolden, GreedyTokensAndStepLogitsMatchTransformers) {
  std::string dir = golden_dir(GetParam().name);
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto expected_json = read_json(dir + "/expected.json");
  auto want = expected_json["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& step_logits = expected->tensors.at("greedy_step_logits");
  int64_t vocab = step_logits.shape[1];

  // Decode step by step through one session (KV cache), checking each
  // step's logits as transformers' generate() saw them.
  std::vector<int32_t> ids = prompt_ids(dir);
  Session s(**model, int64_t(ids.size() + want.size()));
  std::vector<int32_t> got;
  std::vector<int32_t> next = ids;
  for (size_t k = 0; k < want.size(); ++k) {
    auto outs = s.step(next, {"logits"});
    ASSERT_TRUE(outs.ok()) << outs.error().message;
    const Tensor& logits = outs->at("logits");
    const float* last = logits.f32() + (logits.shape[0] - 1) * vocab;
    auto c = compare_f32(last, step_logits.f32() + int64_t(k) * vocab, vocab);
    EXPECT_TRUE(c.ok()) << GetParam().name << ": greedy step " << k << " logits differ by " << c.max_abs
                        << " (allowed " << c.bound << ")";
    got.push_back(argmax({last, size_t(vocab)}));
    next = {got.back()};
  }
  EXPECT_EQ(got, want) << GetParam().name;

  // The same through generate(), the path archrun takes.
  GenerateOptions opt;
  opt.max_new_tokens = int(want.size());
  auto r = generate(**model, ids, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, want) << GetParam().name;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, DecoderGolden,
    ::testing::Values(Case{"llama", "LlamaStyle"}, Case{"llama3_rope", "LlamaStyle"},
                      Case{"llama_bf16", "LlamaStyle"}, Case{"llama_tf447", "LlamaStyle"},
                      Case{"mistral", "LlamaStyle"}, Case{"qwen2", "LlamaStyle"}, Case{"qwen3", "LlamaStyle"},
                      Case{"gemma", "LlamaStylePlus"}, Case{"gemma2", "LlamaStylePlus"},
                      Case{"gemma3_text", "LlamaStylePlus"}, Case{"mixtral", "MoEStyle"},
                      Case{"qwen2_moe", "MoEStyle"}, Case{"qwen3_moe", "MoEStyle"},
                      Case{"gemma4_text", "LlamaStylePlus4"}, Case{"gemma4_moe", "LlamaStylePlus4"},
                      Case{"gpt2", "GPT2Style"}, Case{"gpt_neox", "NeoXStyle"}, Case{"phi", "PhiStyle"},
                      Case{"phi3", "Phi3Style"}, Case{"phi3_longrope", "Phi3Style"},
                      Case{"starcoder2", "StarCoder2Style"}, Case{"deepseek_v2", "DeepSeekStyle"},
                      Case{"deepseek_v2_lite", "DeepSeekStyle"}, Case{"deepseek_v3", "DeepSeekStyle"},
                      Case{"qwen3_next", "Qwen3NextStyle"}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

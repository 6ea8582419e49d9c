// Gemma 4 configs come in two spellings of the full-attention layers' shape:
// transformers >= 5.15 writes per_layer_config ({"<layer>": {"head_dim": ..,
// "num_key_value_heads": ..}}), transformers 5.5 (and the released
// checkpoints) global_head_dim / num_global_key_value_heads. The goldens keep
// the 5.5 one as config.transformers-5.5.json: the same checkpoint under
// that config must bind the same weights and give the same logits and
// greedy tokens.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

class Gemma4ConfigSpelling : public ::testing::TestWithParam<std::string> {};

// The golden's checkpoint with config.transformers-5.5.json as its config
// (the golden directory is read-only, so a copy in a temp dir).
fs::path with_55_config(const std::string& dir, const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("gemma4_55_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  fs::copy_file(fs::path(dir) / "config.transformers-5.5.json", d / "config.json");
  fs::copy_file(fs::path(dir) / "model.safetensors", d / "model.safetensors");
  fs::copy_file(fs::path(dir) / "generation_config.json", d / "generation_config.json");
  return d;
}

// Prompt logits of one session step.
Result<Tensor> prompt_logits(const Model& m, const std::vector<int32_t>& ids) {
  Session s(m, int64_t(ids.size()));
  ARCH_TRY(auto outs, s.step(ids, {"logits"}));
  return outs.at("logits");
}

TEST_P(Gemma4ConfigSpelling, Transformers55ConfigGivesTheSameModel) {
  std::string dir = testing::golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto cfg55 = testing::read_json(dir + "/config.transformers-5.5.json");
  auto cfg516 = testing::read_json(dir + "/config.json");
  // The two spellings really differ.
  ASSERT_TRUE(cfg55.contains("global_head_dim") && !cfg55.contains("per_layer_config"));
  ASSERT_TRUE(cfg516.contains("per_layer_config") && !cfg516.contains("global_head_dim"));

  fs::path tmp = with_55_config(dir, GetParam());
  auto m516 = load_model(dir);
  ASSERT_TRUE(m516.ok()) << m516.error().message;
  auto m55 = load_model(tmp.string());
  ASSERT_TRUE(m55.ok()) << m55.error().message;
  EXPECT_EQ((*m55)->family, "LlamaStylePlus4");
  EXPECT_EQ((*m55)->family, (*m516)->family);
  // Every tensor read, under both spellings, with the same declared shapes.
  EXPECT_TRUE((*m55)->unused_tensors.empty());
  EXPECT_TRUE((*m516)->unused_tensors.empty());
  const auto& w55 = (*m55)->graph().weights;
  const auto& w516 = (*m516)->graph().weights;
  ASSERT_EQ(w55.size(), w516.size());
  for (size_t k = 0; k < w55.size(); ++k) {
    EXPECT_EQ(w55[k].tensor, w516[k].tensor);
    EXPECT_EQ(shape_str((*m55)->graph().values[size_t(w55[k].value)].type.shape),
              shape_str((*m516)->graph().values[size_t(w516[k].value)].type.shape))
        << w55[k].tensor;
  }

  // The same prompt logits (the same graph over the same weights: equal),
  // within the golden's tolerance of transformers'.
  auto ids = testing::read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  auto l55 = prompt_logits(**m55, ids);
  ASSERT_TRUE(l55.ok()) << l55.error().message;
  auto l516 = prompt_logits(**m516, ids);
  ASSERT_TRUE(l516.ok()) << l516.error().message;
  ASSERT_EQ(l55->shape, l516->shape);
  auto same = testing::compare_f32(l55->f32(), l516->f32(), l516->numel(), 0.0, 0.0);
  EXPECT_TRUE(same.ok()) << "the two spellings' logits differ by " << same.max_abs;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  const Tensor& ref = expected->tensors.at("logits");
  ASSERT_EQ(l55->numel(), ref.numel());
  auto c = testing::compare_f32(l55->f32(), ref.f32(), ref.numel());
  EXPECT_TRUE(c.ok()) << "logits differ by " << c.max_abs << " (allowed " << c.bound << ")";

  // The same greedy tokens as transformers.
  auto want = testing::read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  GenerateOptions opt;
  opt.max_new_tokens = int(want.size());
  auto r = generate(**m55, ids, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, want);
  fs::remove_all(tmp);
}

INSTANTIATE_TEST_SUITE_P(Cases, Gemma4ConfigSpelling, ::testing::Values("gemma4_text", "gemma4_moe"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace arch

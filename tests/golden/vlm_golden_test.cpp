// The vision-language goldens (llava, gemma3_vlm) through the library: the
// image tower's states, the projected image features, the prompt's
// tensors with the features in place of its image tokens, and the 16
// greedy tokens with each step's logits, against transformers' own.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/generate.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::compare_f32;
using testing::golden_dir;
using testing::grounded_rel;
using testing::read_json;

class VlmGolden : public ::testing::TestWithParam<const char*> {};

struct GoldenInputs {
  std::vector<int32_t> ids;
  Tensor pixels;
  std::map<std::string, Tensor> expected;
};

GoldenInputs read_inputs(const std::string& dir) {
  GoldenInputs in;
  in.ids = read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  auto inputs = read_safetensors(dir + "/inputs.safetensors");
  EXPECT_TRUE(inputs.ok()) << inputs.error().message;
  if (inputs.ok()) in.pixels = inputs->tensors.at("pixel_values");
  auto expected = read_safetensors(dir + "/expected.safetensors");
  EXPECT_TRUE(expected.ok()) << expected.error().message;
  if (expected.ok()) in.expected = expected->tensors;
  return in;
}

// Ours against the golden's tensor of that name, element by element over
// ours (a leading batch of 1 aside; the tower's layers ours runs are the
// golden's first ones).
void expect_close(const std::string& dir, const std::string& name, const Tensor& ours, const Tensor& ref) {
  ASSERT_LE(ours.numel(), ref.numel()) << name;
  ASSERT_EQ(ours.shape.back(), ref.shape.back()) << name;
  auto c = compare_f32(ours.f32(), ref.f32(), ours.numel(), grounded_rel(dir, name));
  EXPECT_TRUE(c.ok()) << dir << ": " << name << " differs by " << c.max_abs << " (allowed " << c.bound
                      << ", worst element " << c.worst << ")";
}

TEST_P(VlmGolden, ImageAndPromptTensorsMatchTransformers) {
  const std::string dir = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  GoldenInputs in = read_inputs(dir);
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    LoadOptions lo;
    lo.backend = backend;
    auto model = load_model(dir, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->family, "VisionLanguage");
    EXPECT_FALSE((*model)->is_encoder_decoder());
    EXPECT_EQ((*model)->optional_state(), std::vector<std::string>{"image_features"});
    Session s(**model, int64_t(in.ids.size()));
    const std::vector<std::string> tower = {"vision_embeddings", "vision_layer_outputs", "projector_input",
                                            "vision_last_hidden_state"};
    auto image = s.encode({{"pixel_values", in.pixels}}, tower);
    ASSERT_TRUE(image.ok()) << image.error().message;
    int compared = 0;
    for (const auto& name : tower)
      if (image->count(name) && in.expected.count(name)) {
        expect_close(dir, name, image->at(name), in.expected.at(name));
        ++compared;
      }
    EXPECT_GE(compared, 2);
    ASSERT_TRUE(image->count("image_features"));
    EXPECT_EQ(image->at("image_features").shape, in.expected.at("image_features").shape);
    expect_close(dir, "image_features", image->at("image_features"), in.expected.at("image_features"));

    const std::vector<std::string> names = {"embeddings", "layer_outputs", "last_hidden_state", "logits"};
    auto outs = s.step(in.ids, names);
    ASSERT_TRUE(outs.ok()) << outs.error().message;
    for (const auto& name : names) {
      EXPECT_EQ(outs->at(name).numel(), in.expected.at(name).numel()) << name;
      expect_close(dir, name, outs->at(name), in.expected.at(name));
    }
  }
}

TEST_P(VlmGolden, GreedyTokensAndStepLogitsMatchTransformers) {
  const std::string dir = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  GoldenInputs in = read_inputs(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const nlohmann::json greedy = read_json(dir + "/expected.json")["greedy"];
  const auto want = greedy["new_token_ids"].get<std::vector<int32_t>>();
  GenerateOptions opt;
  opt.max_new_tokens = int(want.size());
  std::vector<Tensor> step_logits;
  Session s(**model, int64_t(in.ids.size() + want.size()));
  auto r = generate_encoded(s, {{"pixel_values", in.pixels}}, in.ids, opt);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tokens, want);

  // Each greedy step's logits: the prompt's last row, then one row per token fed back.
  Session again(**model, int64_t(in.ids.size() + want.size()));
  ASSERT_TRUE(again.encode({{"pixel_values", in.pixels}}).ok());
  const Tensor& ref = in.expected.at("greedy_step_logits");
  const int64_t vocab = ref.shape.back();
  std::vector<int32_t> next = in.ids;
  for (size_t k = 0; k < want.size(); ++k) {
    auto outs = again.step(next, {"logits"}, /*last_only=*/true);
    ASSERT_TRUE(outs.ok()) << outs.error().message;
    const Tensor& row = outs->at("logits");
    auto c = compare_f32(row.f32() + row.numel() - vocab, ref.f32() + int64_t(k) * vocab, vocab);
    EXPECT_TRUE(c.ok()) << "step " << k << " logits differ by " << c.max_abs << " (allowed " << c.bound << ")";
    next = {want[k]};
  }
}

TEST_P(VlmGolden, TheTextModelRunsWithoutAnImage) {
  const std::string dir = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  Session s(**model, 8);
  auto outs = s.step(std::vector<int32_t>{1, 5, 7});
  ASSERT_TRUE(outs.ok()) << outs.error().message;
  EXPECT_EQ(outs->at("logits").shape.back(), (*model)->config_int("vocab_size", 0));
  // An image token with no image is refused by name.
  const int32_t image_token = int32_t((*model)->config_int("image_token_index", -1));
  Session t(**model, 8);
  auto refused = t.step(std::vector<int32_t>{1, image_token});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("no rows were given"), std::string::npos) << refused.error().message;
}

// A batched session's slot holding the image decodes what one session
// does, beside a slot with text alone (the server's continuous batching).
TEST_P(VlmGolden, ABatchedSlotWithTheImageDecodesAsOneSession) {
  const std::string dir = golden_dir(GetParam());
  ARCH_REQUIRE_SHARED(dir);
  GoldenInputs in = read_inputs(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const auto want = read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  Session one(**model, 8);
  auto image = one.encode({{"pixel_values", in.pixels}});
  ASSERT_TRUE(image.ok()) << image.error().message;
  auto batched = BatchedSession::make(**model, 2, int64_t(in.ids.size() + want.size()));
  ASSERT_TRUE(batched.ok()) << batched.error().message;
  BatchedSession& b = **batched;
  ASSERT_TRUE(b.hold(1, {{"image_features", image->at("image_features")}}).ok());
  const std::vector<int32_t> text = {in.ids[0], 5, 7};
  BatchedSession::Piece prompt{1, in.ids}, other{0, text};
  ASSERT_TRUE(b.run(std::span(&other, 1)).ok());
  auto logits = b.run(std::span(&prompt, 1));
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  auto argmax = [](const float* row, int64_t n) { return int32_t(std::max_element(row, row + n) - row); };
  const int64_t vocab = logits->dim(-1);
  std::vector<int32_t> got = {argmax(logits->f32(), vocab)};
  int32_t text_next = 9;
  while (got.size() < want.size()) {
    std::vector<BatchedSession::Piece> step = {{1, std::span(&got.back(), 1)}, {0, std::span(&text_next, 1)}};
    auto l = b.run(step);
    ASSERT_TRUE(l.ok()) << l.error().message;
    got.push_back(argmax(l->f32(), vocab));
  }
  EXPECT_EQ(got, want);
}

// A config whose image-token count disagrees with what the tower and the
// projector make is refused by the template, naming the field.
TEST(VlmConfig, ImageTokenCountsThatDisagreeAreRefused) {
  struct Bad {
    const char* golden;
    const char* field;
    int value;
    const char* says;
  };
  for (const Bad& b : {Bad{"llava", "image_seq_length", 576, "image_seq_length 576 is not the tower's 16 image tokens"},
                       Bad{"gemma3_vlm", "mm_tokens_per_image", 8, "mm_tokens_per_image 8 is not a square"}}) {
    const std::string dir = golden_dir(b.golden);
    ARCH_REQUIRE_SHARED(dir);
    arch::testing::TempDir tmp;
    std::filesystem::create_symlink(dir + "/model.safetensors", tmp / "model.safetensors");
    nlohmann::json config = read_json(dir + "/config.json");
    config[b.field] = b.value;
    arch::testing::write_file(tmp / "config.json", config.dump());
    auto model = load_model(tmp.path());
    ASSERT_FALSE(model.ok()) << b.golden;
    EXPECT_NE(model.error().message.find(b.says), std::string::npos) << model.error().message;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, VlmGolden, ::testing::Values("llava", "gemma3_vlm"),
                         [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace arch

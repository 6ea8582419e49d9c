// Encoder and vision goldens through forward(): every tensor transformers
// stored in expected.safetensors, per layer where it is stacked, within the
// golden README's float32 rule.
#include <gtest/gtest.h>

#include "tests/golden/golden_compare.h"
#include "tools/toolkit/compare.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/model.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

struct Case {
  const char* name;
  const char* family;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class EncoderGolden : public ::testing::TestWithParam<Case> {};

TEST_P(EncoderGolden, EveryExpectedTensorMatchesTransformers) {
  std::string dir = testing::golden_dir(GetParam().name);
  ARCH_REQUIRE_SHARED(dir);
  testing::expect_matches_golden(dir, GetParam().family, 4);
}

INSTANTIATE_TEST_SUITE_P(Cases, EncoderGolden,
                         ::testing::Values(Case{"bert", "BertStyle"}, Case{"bert_mlm", "BertStyle"},
                                           Case{"roberta", "BertStyle"}, Case{"xlm_roberta", "BertStyle"},
                                           Case{"modernbert", "BertStyle"}, Case{"modernbert_mlm", "BertStyle"}, Case{"deberta_v2", "BertStyle"}, Case{"vit", "ViTStyle"},
                                           Case{"vit_model", "ViTStyle"}, Case{"clip_vision", "ViTStyle"}, Case{"deit", "ViTStyle"},
                                           Case{"dinov2", "ViTStyle"}, Case{"dinov2_interp", "ViTStyle"}, Case{"dinov2_registers", "ViTStyle"}, Case{"siglip_vision", "ViTStyle"},
                                           Case{"resnet", "CNNStyle"}, Case{"resnet_bottleneck", "CNNStyle"}, Case{"swin2sr", "CNNStyle"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// `_` dims take whatever the call brings: a non-square image through ResNet.
TEST(EncoderShapes, ANonSquareImageThroughACnn) {
  std::string dir = testing::golden_dir("resnet");
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  Tensor pixels = Tensor::zeros(DType::F32, {1, 3, 64, 48});
  for (int64_t i = 0; i < pixels.numel(); ++i) pixels.f32()[i] = float((i * 7) % 13) / 13.0f - 0.5f;
  auto out = forward(**model, {{"pixel_values", pixels}}, {"hidden_state_3", "logits"});
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(out->at("hidden_state_3").shape, (Dims{48, 4, 3}));
  EXPECT_EQ(out->at("logits").shape, (Dims{10}));
}

}  // namespace
}  // namespace arch

// Encoder and vision goldens through forward(): every tensor transformers
// stored in expected.safetensors, per layer where it is stacked, within the
// golden README's float32 rule.
#include <gtest/gtest.h>

#include "engine/compare.h"
#include "engine/model.h"
#include "importer/safetensors.h"
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
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->family, GetParam().family);
  auto r = compare_with_golden(**model, dir);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->missing.empty()) << GetParam().name << ": no output " << r->missing.front();
  EXPECT_GE(r->tensors.size(), 4u);
  for (const auto& t : r->tensors)
    EXPECT_TRUE(t.ok()) << GetParam().name << ": " << t.name << " differs by " << t.max_abs << " (allowed "
                        << t.bound << ")";
}

INSTANTIATE_TEST_SUITE_P(Cases, EncoderGolden,
                         ::testing::Values(Case{"bert", "BertStyle"}, Case{"bert_mlm", "BertStyle"},
                                           Case{"roberta", "BertStyle"}, Case{"vit", "ViTStyle"},
                                           Case{"vit_model", "ViTStyle"}, Case{"clip_vision", "ViTStyle"},
                                           Case{"resnet", "CNNStyle"}, Case{"resnet_bottleneck", "CNNStyle"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

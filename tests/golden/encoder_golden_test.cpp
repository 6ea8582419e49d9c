// Encoder and vision goldens through forward(): every tensor transformers
// stored in expected.safetensors, per layer where it is stacked, within the
// golden README's float32 rule.
#include <gtest/gtest.h>

#include "engine/forward.h"
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

// The case's inputs as forward() takes them: ids from inputs.json, images
// from inputs.safetensors.
std::map<std::string, Tensor> case_inputs(const std::string& dir) {
  std::map<std::string, Tensor> in;
  auto j = testing::read_json(dir + "/inputs.json");
  for (const char* key : {"input_ids", "token_type_ids"}) {
    if (!j.contains(key) || !j[key].is_array()) continue;
    auto ids = j[key].get<std::vector<int32_t>>();
    Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
    std::copy(ids.begin(), ids.end(), t.i32());
    in[key] = t;
  }
  if (std::filesystem::exists(dir + "/inputs.safetensors")) {
    auto f = read_safetensors(dir + "/inputs.safetensors");
    if (f.ok())
      for (auto& [name, t] : f->tensors) in[name] = t;
  }
  return in;
}

class EncoderGolden : public ::testing::TestWithParam<Case> {};

TEST_P(EncoderGolden, EveryExpectedTensorMatchesTransformers) {
  std::string dir = testing::golden_dir(GetParam().name);
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_EQ((*model)->family, GetParam().family);
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok()) << expected.error().message;
  std::vector<std::string> names;
  for (const auto& [name, t] : expected->tensors) names.push_back(name);
  auto outs = forward(**model, case_inputs(dir), names);
  ASSERT_TRUE(outs.ok()) << outs.error().message;
  for (const auto& name : names) {
    const Tensor& out = outs->at(name);
    const Tensor& ref = expected->tensors.at(name);
    ASSERT_EQ(out.shape, ref.shape) << name;
    bool stacked = name.find("layer_outputs") != std::string::npos;
    int64_t parts = stacked ? ref.shape[0] : 1, n = ref.numel() / parts;
    for (int64_t p = 0; p < parts; ++p) {
      auto c = testing::compare_f32(out.f32() + p * n, ref.f32() + p * n, n);
      EXPECT_TRUE(c.ok()) << GetParam().name << ": " << name << (stacked ? "[" + std::to_string(p) + "]" : "")
                          << " differs by " << c.max_abs << " (allowed " << c.bound << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, EncoderGolden,
                         ::testing::Values(Case{"bert", "BertStyle"}, Case{"bert_mlm", "BertStyle"},
                                           Case{"roberta", "BertStyle"}, Case{"vit", "ViTStyle"},
                                           Case{"vit_model", "ViTStyle"}, Case{"clip_vision", "ViTStyle"},
                                           Case{"resnet", "CNNStyle"}, Case{"resnet_bottleneck", "CNNStyle"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

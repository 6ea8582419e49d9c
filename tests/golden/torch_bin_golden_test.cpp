// Goldens re-saved by torch (../shared/golden/torch_bin): pytorch_model.bin
// in torch's zip form, sharded with its index, and in the legacy form, run
// through the same templates and matched against transformers' outputs;
// the one whose pickle asks for os.system is refused, and nothing runs.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/model.h"
#include "tests/golden/golden_compare.h"
#include "tests/test_files.h"

namespace arch {
namespace {

struct Case {
  const char* name;
  const char* family;
  size_t min_tensors;
};

class TorchBinGolden : public ::testing::TestWithParam<Case> {};

TEST_P(TorchBinGolden, MatchesTransformers) {
  const std::string dir = testing::golden_dir("torch_bin") + "/" + GetParam().name;
  ARCH_REQUIRE_SHARED(dir);
  testing::expect_matches_golden(dir, GetParam().family, GetParam().min_tensors);
}

INSTANTIATE_TEST_SUITE_P(Files, TorchBinGolden,
                         ::testing::Values(Case{"llama", "LlamaStyle", 1}, Case{"llama_sharded", "LlamaStyle", 1},
                                           Case{"llama_legacy", "LlamaStyle", 1}, Case{"bert", "BertStyle", 3}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TorchBin, APickleAskingForCodeIsRefusedByName) {
  const std::string dir = testing::golden_dir("torch_bin") + "/malicious";
  ARCH_REQUIRE_SHARED(dir);
  const std::string pwned = "/tmp/archetype_pwned";
  std::filesystem::remove(pwned);
  auto model = load_model(dir);
  ASSERT_FALSE(model.ok());
  EXPECT_NE(model.error().message.find("refuses global 'posix.system'"), std::string::npos) << model.error().message;
  EXPECT_NE(model.error().message.find("pytorch_model.bin"), std::string::npos) << model.error().message;
  EXPECT_FALSE(std::filesystem::exists(pwned));
}

}  // namespace
}  // namespace arch

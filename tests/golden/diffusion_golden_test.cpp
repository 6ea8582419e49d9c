// Diffusion denoisers through forward(): every per-block tensor diffusers'
// own modeling code stored in expected.safetensors, within the golden
// README's float32 rule, on both paths.
#include <gtest/gtest.h>

#include "runtime/model.h"
#include "tests/golden/golden_case.h"
#include "tooling/compare.h"

namespace arch {
namespace {

struct Case {
  const char* name;
  const char* family;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class DiffusionGolden : public ::testing::TestWithParam<Case> {};

TEST_P(DiffusionGolden, EveryPerBlockTensorMatchesDiffusers) {
  const std::string dir = testing::golden_dir(GetParam().name);
  ARCH_REQUIRE_SHARED(dir);
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    LoadOptions lo;
    lo.backend = backend;
    auto model = load_model(dir, lo);
    ASSERT_TRUE(model.ok()) << model.error().message;
    EXPECT_EQ((*model)->family, GetParam().family);
    auto r = compare_with_golden(**model, dir);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r->missing.empty()) << GetParam().name << ": no output " << r->missing.front();
    EXPECT_GE(r->tensors.size(), 4u);
    for (const auto& t : r->tensors)
      EXPECT_TRUE(t.ok()) << GetParam().name << ": " << t.name << " differs by " << t.max_abs << " (allowed " << t.bound << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffusionGolden, ::testing::Values(Case{"dit", "DiTDiffusion"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

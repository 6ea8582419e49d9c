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
    // The sampling loop's tensors (ddim_*) are archrun denoise's, not forward's.
    for (const auto& name : r->missing)
      EXPECT_EQ(name.rfind("ddim_", 0), 0u) << GetParam().name << ": no output " << name;
    EXPECT_GE(r->tensors.size(), 4u);
    for (const auto& t : r->tensors)
      EXPECT_TRUE(t.ok()) << GetParam().name << ": " << t.name << " differs by " << t.max_abs << " (allowed " << t.bound << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, DiffusionGolden, ::testing::Values(Case{"dit", "DiTDiffusion"}, Case{"unet_sd15", "UNetDiffusion"}),
                         [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

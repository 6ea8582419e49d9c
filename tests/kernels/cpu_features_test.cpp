// The CPU level the fast kernels use, and the ARCHETYPE_CPU cap: ctest runs
// the kernel and golden suites again under `avx2` and `baseline`
// (tests/CMakeLists.txt), and this checks that the cap reached our own
// dispatch, Highway's and oneDNN's.
#include <gtest/gtest.h>

#include <hwy/targets.h>

#include <cstdlib>
#include <dnnl.hpp>
#include <string>

#include "kernels/cpu/cpu_features.h"
#include "kernels/kernels.h"

namespace arch {
namespace {

std::string cap() {
  const char* c = std::getenv("ARCHETYPE_CPU");
  return c ? c : "";
}

TEST(CpuFeatures, LevelFollowsTheCap) {
  op_table();  // registers the cpu kernels, which applies the cap
  const CpuFeatures& f = cpu_features();
  EXPECT_TRUE(f.cap_error.empty()) << f.cap_error;
  EXPECT_FALSE(f.describe().empty());
  EXPECT_TRUE(!f.avx512_vnni || f.avx512);
  EXPECT_TRUE(!f.avx512_bf16 || f.avx512);
  const int64_t avx512_targets = HWY_AVX3 | HWY_AVX3_DL;
  if (cap() == "avx2" || cap() == "baseline") {
    EXPECT_FALSE(f.avx512 || f.avx512_vnni || f.avx512_bf16);
    EXPECT_NE(f.describe().find("capped"), std::string::npos) << f.describe();
    EXPECT_EQ(hwy::SupportedTargets() & avx512_targets, 0) << "Highway still offers AVX-512";
    EXPECT_LE(int(dnnl::get_effective_cpu_isa()), int(dnnl::cpu_isa::avx2)) << "oneDNN still uses AVX-512";
  }
  if (cap() == "baseline") {
    EXPECT_FALSE(f.avx2);
    EXPECT_EQ(hwy::SupportedTargets() & (avx512_targets | HWY_AVX2 | HWY_SSE4 | HWY_SSSE3), 0);
  }
  if (cap().empty()) {
    EXPECT_EQ(f.describe().find("capped"), std::string::npos);
  }
}

}  // namespace
}  // namespace arch

#include "kernels/cpu/cpu_features.h"

#include <hwy/targets.h>

#include <cstdlib>

#include <dnnl.hpp>

namespace arch {

namespace {

CpuFeatures detect() {
  CpuFeatures f;
  const char* cap = std::getenv("ARCHETYPE_CPU");
  const std::string want = cap ? cap : "";
  if (want == "avx2") f.level = CpuLevel::Avx2;
  else if (want == "baseline") f.level = CpuLevel::Baseline;
  else if (!want.empty() && want != "native")
    f.cap_error = "ARCHETYPE_CPU=" + want + " is not one of native, avx2, baseline";
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512vl");
  f.avx2 = f.level != CpuLevel::Baseline && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (f.level == CpuLevel::Native) {
    f.avx512 = avx512;
    f.avx512_vnni = avx512 && __builtin_cpu_supports("avx512vnni");
    f.avx512_bf16 = avx512 && __builtin_cpu_supports("avx512bf16");
    return f;
  }
  // Highway: every AVX-512 target off, and for the baseline every x86 SIMD
  // target it would pick at run time (the build's own static target stays).
  int64_t off = HWY_AVX3 | HWY_AVX3_DL;
#ifdef HWY_AVX3_ZEN4
  off |= HWY_AVX3_ZEN4;
#endif
#ifdef HWY_AVX3_SPR
  off |= HWY_AVX3_SPR;
#endif
  if (f.level == CpuLevel::Baseline) off |= HWY_AVX2 | HWY_SSE4 | HWY_SSSE3;
  hwy::DisableTargets(off);
  dnnl::set_max_cpu_isa(f.level == CpuLevel::Avx2 ? dnnl::cpu_isa::avx2 : dnnl::cpu_isa::sse41);
  return f;
}

}  // namespace

std::string CpuFeatures::describe() const {
  std::string s;
  if (avx512) {
    s = "avx512";
    if (avx512_vnni || avx512_bf16)
      s += std::string(" (") + (avx512_vnni ? "vnni" : "") + (avx512_vnni && avx512_bf16 ? ", " : "") +
           (avx512_bf16 ? "bf16" : "") + ")";
  } else {
    s = avx2 ? "avx2" : "baseline";
  }
  return level == CpuLevel::Native ? s : s + " (capped by ARCHETYPE_CPU)";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

}  // namespace arch

// What the CPU offers the fast kernels: detected once, and capped by the
// ARCHETYPE_CPU environment variable so that the paths other machines take
// run (and are tested) here too:
//   native (default)  everything detected;
//   avx2              no AVX-512: Highway's AVX2 code, oneDNN's AVX2
//                     kernels, the AVX2 integer kernel (quant_dot_avx2.cpp),
//                     BF16 weights in rows through Highway;
//   baseline          no SIMD beyond what the build assumes.
// The cap is applied to Highway and oneDNN too, before either is first used
// (register_cpu_kernels asks for it).
#pragma once

#include <string>

namespace arch {

enum class CpuLevel { Baseline, Avx2, Native };

struct CpuFeatures {
  CpuLevel level = CpuLevel::Native;
  bool avx2 = false;         // AVX2 and FMA
  bool avx512 = false;       // F, BW and VL
  bool avx512_vnni = false;  // the integer dot products (Q8_0 / Q4_0)
  bool avx512_bf16 = false;  // the bf16 dot products (BF16 tiles)
  std::string cap_error;     // ARCHETYPE_CPU held something else (native is used; tools refuse)
  // "avx512 (vnni, bf16)", "avx2" or "baseline", followed by " (capped by
  // ARCHETYPE_CPU)" when a cap is set.
  std::string describe() const;
};

const CpuFeatures& cpu_features();

}  // namespace arch

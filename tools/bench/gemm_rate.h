// The machine's f32 GEMM rate as this project sees it: best of a few runs
// of the cpu matmul (oneDNN) at 1024^3, GFLOP/s on all threads. The
// yardstick bench_kernels and archrun bench measure prompt-sized work
// against, side by side in one run.
#pragma once

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/op.h"
#include "kernels/kernels.h"

namespace arch {

inline double measure_gemm_gflops() {
  const int64_t n = 1024;
  Tensor a = Tensor::zeros(DType::F32, {n, n}), b = Tensor::zeros(DType::F32, {n, n});
  for (int64_t i = 0; i < n * n; ++i) a.f32()[i] = float(i % 7) * 0.1f, b.f32()[i] = float(i % 5) * 0.1f;
  std::vector<Tensor> inputs{a, b}, outputs{Tensor::zeros(DType::F32, {n, n})};
  std::unique_ptr<OpState> none;
  Attrs attrs = {{"transpose_b", true}};
  std::string where = "yardstick";
  KernelContext ctx{attrs, inputs, outputs, none, 0, where};
  const Kernel* k = op_table().kernel("matmul", "cpu");
  if (!k) return 0;
  double best = 1e9;
  for (int rep = 0; rep < 6; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    if (!(*k)(ctx).ok()) return 0;
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(n * n * n) / best / 1e9;
}

}  // namespace arch

// Mixture-of-experts weights on the cpu backend, in the type they are
// stored (BF16, F16, Q8_0, Q4_0, the k-quants): a q4 import of a MoE model
// keeps its experts q4 instead of widening them back to F32 at load.
//   - stack along axis 0 (how a template gathers per-expert matrices into
//     [E, N, K], folded at load) concatenates the stored rows as they are,
//     or, where each expert's rows fill whole tiles and the CPU has the
//     tile kernels, their tiles (kernels/cpu/tiles.h), as dense decode reads;
//   - routed_matmul groups the rows of a step by the expert they chose and
//     runs each expert's rows as one matmul through the cpu matmul's paths
//     (oneDNN for a prompt's many rows, gemv / integer dot for a few), so
//     an expert's weights are read once per step, not once per row.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "engine/core/quant.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/tiles.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

bool stored_float_or_block(DType t) {
  return t == DType::F32 || t == DType::BF16 || t == DType::F16 || is_block_quantized(t);
}

Status stack_stored(KernelContext& ctx, const Kernel& reference) {
  const Tensor& first = ctx.inputs[0];
  bool plain = attr_int(ctx.attrs, "axis", 0) == 0 && first.shape.size() == 2 && first.dtype != DType::F32 &&
               stored_float_or_block(first.dtype);
  for (const Tensor& t : ctx.inputs) plain = plain && t.dtype == first.dtype && t.shape == first.shape && t.data;
  if (!plain) return reference(ctx);
  // In tiles where the dense matmuls' decode reads its weights so (each
  // expert whole tiles: its rows a multiple of a tile's), one expert after
  // another: the tiling of all their rows in turn, each expert's share a
  // matrix of its own (routed_matmul's views).
  const int64_t E = int64_t(ctx.inputs.size()), N = first.dim(0), K = first.dim(1);
  if (tiles_pay(first.dtype, K) && N % rows_per_tile(tiles_for(first.dtype)) == 0) {
    std::vector<const Tensor*> parts;
    for (const Tensor& t : ctx.inputs) parts.push_back(&t);
    Tensor tiled = interleave_rows(parts);  // [E * N, K]
    tiled.shape = {E, N, K};
    ctx.outputs[0] = std::move(tiled);
    return {};
  }
  Tensor out = Tensor::zeros(first.dtype, {E, N, K});
  auto* dst = static_cast<uint8_t*>(out.data);
  for (const Tensor& t : ctx.inputs) {
    std::memcpy(dst, t.data, t.nbytes());
    dst += t.nbytes();
  }
  ctx.outputs[0] = std::move(out);  // in the stored type, not the F32 the IR declares
  return {};
}

Status routed_matmul_cpu(KernelContext& ctx, const Kernel& reference) {
  const Tensor& X = ctx.inputs[0];    // [S, K] or [S, k, K]
  const Tensor& W = ctx.inputs[1];    // [E, N, K]
  const Tensor& Idx = ctx.inputs[2];  // [S, k]
  if (X.dtype != DType::F32 || Idx.dtype != DType::I32 || W.shape.size() != 3 || Idx.shape.size() != 2 ||
      (X.shape.size() != 2 && X.shape.size() != 3) || X.dim(-1) != W.dim(2) || X.dim(0) != Idx.dim(0) ||
      !stored_float_or_block(W.dtype))
    return reference(ctx);  // its checks and messages
  const int64_t S = Idx.dim(0), k = Idx.dim(1), E = W.dim(0), N = W.dim(1), K = W.dim(2);
  const bool per_choice = X.shape.size() == 3;
  ARCH_TRY_STATUS(expect_output(ctx, "routed_matmul", 0, Dims{S, k, N}));
  std::vector<std::vector<int64_t>> chosen(static_cast<size_t>(E));  // expert -> flat (s, j)
  for (int64_t i = 0; i < S * k; ++i) {
    const int32_t e = Idx.i32()[i];
    if (e < 0 || e >= E)
      return kernel_error(ctx, "routed_matmul", "expert id " + std::to_string(e) + " (idx[" + std::to_string(i / k) +
                                                    ", " + std::to_string(i % k) + "]) is out of range for " +
                                                    std::to_string(E) + " experts");
    chosen[size_t(e)].push_back(i);
  }
  // A tiled stack holds whole tiles per expert (stack_stored tiles only then).
  if (W.layout && N % rows_per_tile(tiles_of(W)) != 0) return reference(ctx);
  const size_t expert_bytes = W.nbytes() / size_t(E);
  float* out = ctx.outputs[0].f32();
  std::vector<int64_t> used;  // the experts some row chose
  int64_t most_rows = 0;
  for (int64_t e = 0; e < E; ++e)
    if (!chosen[size_t(e)].empty()) {
      used.push_back(e);
      most_rows = std::max<int64_t>(most_rows, int64_t(chosen[size_t(e)].size()));
    }
  auto run_expert = [&](int64_t e) -> Status {
    const auto& rows = chosen[size_t(e)];
    const int64_t M = int64_t(rows.size());
    Tensor a = Tensor::zeros(DType::F32, {M, K}), y = Tensor::zeros(DType::F32, {M, N});
    for (int64_t r = 0; r < M; ++r) {
      const int64_t i = rows[size_t(r)];
      std::memcpy(a.f32() + r * K, X.f32() + (per_choice ? i : i / k) * K, size_t(K) * 4);
    }
    Tensor w = Tensor::view(W.dtype, {N, K}, static_cast<uint8_t*>(W.data) + size_t(e) * expert_bytes, W.owner);
    w.layout = W.layout;  // tiles: each expert's whole ones
    ARCH_TRY_STATUS(matmul_rows(a, w, y, ctx.where));
    for (int64_t r = 0; r < M; ++r) std::memcpy(out + rows[size_t(r)] * N, y.f32() + r * N, size_t(N) * 4);
    return {};
  };
  // A decode step's few rows: the experts shared out over the threads, each
  // expert's product run by one thread alone (its parallel regions nested,
  // so inactive), instead of each small product waking every thread:
  // DeepSeek's 6 routed experts and 16 heads' folded projections a layer.
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads > 1 && used.size() > 1 && most_rows <= 4) {
    std::vector<Status> status(used.size());
#pragma omp parallel for schedule(dynamic, 1)
    for (size_t u = 0; u < used.size(); ++u) status[u] = run_expert(used[u]);
    for (const Status& st : status) ARCH_TRY_STATUS(st);
    return {};
  }
  for (int64_t e : used) ARCH_TRY_STATUS(run_expert(e));
  return {};
}

}  // namespace

void register_cpu_experts(OpTable& t) {
  const Kernel stack_ref = *t.kernel("stack", "reference");
  t.add_kernel(
      "stack", "cpu", [stack_ref](KernelContext& ctx) { return stack_stored(ctx, stack_ref); },
      [](const Attrs& attrs, size_t, DType stored) {
        return attrs.value("axis", 0) == 0 && stored_float_or_block(stored);
      });
  const Kernel routed_ref = *t.kernel("routed_matmul", "reference");
  t.add_kernel(
      "routed_matmul", "cpu", [routed_ref](KernelContext& ctx) { return routed_matmul_cpu(ctx, routed_ref); },
      [](const Attrs&, size_t input, DType stored) { return input == 1 && stored_float_or_block(stored); },
      quantized_check_tolerance);
}

}  // namespace arch

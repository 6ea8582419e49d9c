// MoE weights on the cpu backend as stored: stack keeps the stored type,
// routed_matmul on stacked BF16 / Q8_0 weights gives what the cpu matmul
// gives on each chosen expert, and F32 matches the reference kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/core/quant.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/tiles.h"
#include "kernels/kernels.h"
#include "tests/kernels/cpu_test_util.h"

namespace arch {
namespace {

Tensor random_f32(Dims shape, uint32_t seed) { return test::normal_f32(std::move(shape), seed); }

Status run(const std::string& op, const std::string& backend, std::vector<Tensor> inputs, std::vector<Tensor>& outputs,
           Attrs attrs) {
  std::unique_ptr<OpState> none;
  std::string where = "test";
  KernelContext ctx{attrs, inputs, outputs, none, 0, where};
  return (*op_table().kernel(op, backend))(ctx);
}

// routed_matmul on `stacked` against the cpu matmul on each row and the
// expert it chose (`alone[e]`, stored as routed_matmul reads expert e).
void expect_each_choice_as_alone(const Tensor& x, const Tensor& stacked, const Tensor& idx,
                                 const std::vector<Tensor>& alone, double rel) {
  const int64_t S = idx.dim(0), k = idx.dim(1), N = stacked.dim(1), K = stacked.dim(2);
  std::vector<Tensor> got{Tensor::zeros(DType::F32, {S, k, N})};
  ASSERT_TRUE(run("routed_matmul", "cpu", {x, stacked, idx}, got, {}).ok());
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < k; ++j) {
      Tensor row = Tensor::zeros(DType::F32, {1, K}), want = Tensor::zeros(DType::F32, {1, N});
      std::memcpy(row.f32(), x.f32() + s * K, size_t(K) * 4);
      ASSERT_TRUE(matmul_rows(row, alone[size_t(idx.i32()[s * k + j])], want, "test").ok());
      for (int64_t n = 0; n < N; ++n)
        EXPECT_NEAR(got[0].f32()[(s * k + j) * N + n], want.f32()[n], rel * (1 + std::abs(want.f32()[n])))
            << "S " << S << " row " << s << " choice " << j << " n " << n;
    }
}

// Experts whose rows fill whole tiles (64 here: Q4_0 / Q8_0 tiles hold 16,
// BF16 ones 64) are stacked in the tiles the dense decode reads, one expert
// after another, where the CPU has the kernels for them; routed_matmul reads
// each expert's tiles as a matrix of its own, a decode step's few rows and a
// prompt's many alike, as the cpu matmul does on that expert tiled alone.
TEST(CpuExperts, WholeTileExpertsAreStackedInTiles) {
  const int64_t E = 3, N = 64, K = 64, k = 2;
  std::vector<Tensor> experts_f32;
  for (int64_t e = 0; e < E; ++e) experts_f32.push_back(random_f32({N, K}, uint32_t(40 + e)));
  for (DType dtype : {DType::BF16, DType::Q8_0, DType::Q4_0}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::vector<Tensor> experts;
    for (const Tensor& w : experts_f32) experts.push_back(convert_to(w, dtype));
    std::vector<Tensor> stacked{Tensor::zeros(DType::F32, {E, N, K})};
    ASSERT_TRUE(run("stack", "cpu", experts, stacked, {{"axis", 0}}).ok());
    EXPECT_EQ(stacked[0].dtype, dtype);
    EXPECT_EQ(stacked[0].shape, (Dims{E, N, K}));
    // Tiled exactly where the dense matmul would tile such a matrix.
    EXPECT_EQ(stacked[0].layout != 0, tiles_pay(dtype, K));
    if (!stacked[0].layout) continue;  // no tile kernels on this CPU: rows, tested below
    std::vector<Tensor> tiled_alone;
    for (const Tensor& w : experts) tiled_alone.push_back(interleave_rows(w));
    for (int64_t S : {1, 9}) {
      Tensor x = random_f32({S, K}, uint32_t(7 + S));
      Tensor idx = Tensor::zeros(DType::I32, {S, k});
      for (int64_t i = 0; i < S * k; ++i) idx.i32()[i] = int32_t((i * 2 + i / k) % E);
      expect_each_choice_as_alone(x, stacked[0], idx, tiled_alone, 1e-4);
    }
  }
}

TEST(CpuExperts, StackKeepsTheStoredTypeAndRoutedMatmulReadsIt) {
  const int64_t E = 4, N = 24, K = 64, S = 5, k = 2;
  std::vector<Tensor> experts_f32;
  for (int64_t e = 0; e < E; ++e) experts_f32.push_back(random_f32({N, K}, uint32_t(10 + e)));
  Tensor x = random_f32({S, K}, 3);
  Tensor idx = Tensor::zeros(DType::I32, {S, k});
  const int32_t choice[] = {0, 3, 3, 1, 2, 0, 3, 3, 1, 1};
  for (int i = 0; i < S * k; ++i) idx.i32()[i] = choice[i];
  for (DType dtype : {DType::F32, DType::BF16, DType::Q8_0, DType::Q4_0}) {
    SCOPED_TRACE(std::string(dtype_name(dtype)));
    std::vector<Tensor> experts;
    for (const Tensor& w : experts_f32) experts.push_back(convert_to(w, dtype));
    std::vector<Tensor> stacked{Tensor::zeros(DType::F32, {E, N, K})};
    ASSERT_TRUE(run("stack", "cpu", experts, stacked, {{"axis", 0}}).ok());
    EXPECT_EQ(stacked[0].dtype, dtype);
    EXPECT_EQ(stacked[0].shape, (Dims{E, N, K}));
    EXPECT_TRUE(op_table().takes_stored("routed_matmul", "cpu", {}, 1, dtype));

    expect_each_choice_as_alone(x, stacked[0], idx, experts, 1e-4);  // each expert as stored
    if (dtype == DType::F32) {  // and the reference kernel itself
      std::vector<Tensor> got{Tensor::zeros(DType::F32, {S, k, N})};
      ASSERT_TRUE(run("routed_matmul", "cpu", {x, stacked[0], idx}, got, {}).ok());
      std::vector<Tensor> ref{Tensor::zeros(DType::F32, {S, k, N})};
      ASSERT_TRUE(run("routed_matmul", "reference", {x, stacked[0], idx}, ref, {}).ok());
      for (int64_t i = 0; i < ref[0].numel(); ++i) EXPECT_NEAR(got[0].f32()[i], ref[0].f32()[i], 1e-4);
    }
  }
}

TEST(CpuExperts, OutOfRangeExpertIsTheReferencesError) {
  Tensor x = random_f32({1, 32}, 1), w = convert_to(random_f32({8, 32}, 2), DType::Q8_0);
  std::vector<Tensor> stacked{Tensor::zeros(DType::F32, {1, 8, 32})};
  ASSERT_TRUE(run("stack", "cpu", {w}, stacked, {{"axis", 0}}).ok());
  Tensor idx = Tensor::zeros(DType::I32, {1, 1});
  idx.i32()[0] = 3;
  std::vector<Tensor> out{Tensor::zeros(DType::F32, {1, 1, 8})};
  Status st = run("routed_matmul", "cpu", {x, stacked[0], idx}, out, {});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("expert id 3"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace arch

// The cpu matmul against the reference on every weight type it reads as
// stored, at shapes that exercise the row tiles, the K tails and the thread
// split: BF16 (in rows or interleaved) and F16 within the op's f32
// tolerance of the reference on the widened weights; Q8_0/Q4_0 exactly (up
// to f32 rounding) what int8 activations times quantized weights give, in
// 16-row tiles at every size and in rows at decode sizes (M <= 4), and in
// rows at prompt sizes (bf16 activations, oneDNN) close to the f32 product.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/core/quant.h"
#include "kernels/cpu/tiles.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/kernels.h"
#include "tests/kernels/cpu_test_util.h"

namespace arch {
namespace {

Tensor random_f32(Dims shape, uint32_t seed) { return test::normal_f32(std::move(shape), seed); }

// The forms the kernels read: rows, and the tiles a loaded model makes.
const WeightForm kF32{DType::F32}, kBF16{DType::BF16}, kF16{DType::F16}, kQ8{DType::Q8_0}, kQ4{DType::Q4_0};
const WeightForm kBF16x64{DType::BF16, Tiles::BF16x64}, kQ8x16{DType::Q8_0, Tiles::Q8_0x16},
    kQ4x16{DType::Q4_0, Tiles::Q4_0x16};

// w stored as `form`; tiles by way of their row layout, as make_program makes them.
Tensor stored_as(const Tensor& w, WeightForm form) { return stored_in(w, form); }
// BF16x64 only where the CPU has AVX-512 BF16 (the only place it is made).
bool storable(WeightForm form, int64_t k) {
  return form.tiles == Tiles::BF16x64 ? k % 16 == 0 && has_avx512_bf16_dot() : quantizable(form.dtype, k);
}

using test::max_abs;
using test::run_matmul;

struct Case {
  int64_t M, N, K;
};
const Case kCases[] = {{1, 5, 64}, {1, 67, 128}, {3, 33, 96}, {4, 64, 256}, {7, 19, 64}, {33, 130, 192}, {1, 300, 512},
                       {2, 9, 576}, {1, 40, 320},  // K % 128 == 64: a natural-order tail after whole chunks
                       {100, 24, 64},              // oneDNN in two runs of rows: 96 + 4
                       // Shared out on the team (share_out): a batched step's rows
                       // quantized in the region, units with a partial tile and a
                       // partial last unit; a few rows' gemm.
                       {16, 1100, 256}, {9, 700, 128}, {2, 520, 128}};

TEST(CpuMatmul, WidenedTypesMatchTheReference) {
  for (WeightForm form : {kF32, kBF16, kF16, kBF16x64})
    for (const Case& c : kCases) {
      if (form.tiles == Tiles::BF16x64 && !storable(form, c.K)) continue;
      Tensor a = random_f32({c.M, c.K}, 1), w = random_f32({c.N, c.K}, 2);
      Tensor stored = stored_as(w, form);
      Tensor want = run_matmul("reference", a, to_f32(stored)), got = run_matmul("cpu", a, stored);
      double bound = 1e-5 * max_abs(want) + 1e-6, worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i) worst = std::max(worst, double(std::abs(got.f32()[i] - want.f32()[i])));
      EXPECT_LE(worst, bound) << form_name(form) << " M=" << c.M << " N=" << c.N << " K=" << c.K;
    }
}

TEST(CpuMatmul, QuantizedMatchesQuantizedOperands) {
  for (WeightForm form : {kQ8, kQ4, kQ8x16, kQ4x16})
    for (const Case& c : kCases) {
      if (!storable(form, c.K)) continue;
      Tensor a = random_f32({c.M, c.K}, 3), w = random_f32({c.N, c.K}, 4);
      Tensor stored = stored_as(w, form);
      Tensor got = run_matmul("cpu", a, stored);
      // The same product worked out plainly: dequantized weights times
      // dequantized activations, in double.
      QuantizedActs q;
      quantize_acts(a.f32(), c.M, c.K, c.K, q, form.dtype);
      Tensor wf = to_f32(stored), exact_f32 = run_matmul("reference", a, wf);
      double bound = 1e-5 * max_abs(exact_f32) + 1e-5, worst = 0, drift = 0;
      for (int64_t m = 0; m < c.M; ++m)
        for (int64_t n = 0; n < c.N; ++n) {
          double want = 0;
          for (int64_t k = 0; k < c.K; ++k)
            want += double(q.at(m, k)) * q.scale[size_t((m * c.K + k) / kQuantBlock)] *
                    wf.f32()[n * c.K + k];
          worst = std::max(worst, std::abs(want - got.f32()[m * c.N + n]));
          drift = std::max(drift, std::abs(double(exact_f32.f32()[m * c.N + n]) - got.f32()[m * c.N + n]));
        }
      if (c.M <= 4 || form.tiles != Tiles::None) {  // tiles: the gemv, or the gemm's MR x NT blocks and tails
        EXPECT_LE(worst, bound) << form_name(form) << " M=" << c.M << " N=" << c.N << " K=" << c.K;
        // int8 activations: within about 1% of the product with f32 activations.
        EXPECT_LE(drift, 0.02 * max_abs(exact_f32)) << form_name(form) << " M=" << c.M;
      } else {
        // bf16 activations (8 significant bits): well within 1%.
        EXPECT_LE(drift, 0.01 * max_abs(exact_f32)) << form_name(form) << " M=" << c.M;
      }
    }
}

// The cpu matmul is registered as writing every output element (the engine
// does not zero its outputs): on every path, NaN left in an output is an
// element it skipped.
TEST(CpuMatmul, WritesEveryOutputElement) {
  EXPECT_TRUE(op_table().fills_outputs("matmul", "cpu"));
  EXPECT_FALSE(op_table().fills_outputs("matmul", "reference"));
  for (WeightForm form : {kF32, kBF16, kF16, kBF16x64, kQ8, kQ4, kQ8x16, kQ4x16})
    for (const Case& c : kCases) {
      const bool rows_of_floats = form.tiles == Tiles::None && !is_quantized(form.dtype);
      if (!rows_of_floats && !storable(form, c.K)) continue;
      Tensor a = random_f32({c.M, c.K}, 12), w = stored_as(random_f32({c.N, c.K}, 13), form);
      Tensor got = run_matmul("cpu", a, w, std::nanf(""));
      int64_t skipped = 0;
      for (int64_t i = 0; i < got.numel(); ++i) skipped += std::isnan(got.f32()[i]);
      EXPECT_EQ(skipped, 0) << form_name(form) << " M=" << c.M << " N=" << c.N << " K=" << c.K;
    }
}

// The paths this CPU does not take by itself: the portable quantized loops
// and the Highway gemv on BF16, against what it does take.
TEST(CpuMatmul, PortablePathsAgreeWithTheVectorOnes) {
  using RowsKernel = void (*)(const QuantizedActs&, const uint8_t*, DType, int64_t, int64_t, float*, int64_t);
  using TilesKernel = void (*)(const QuantizedActs&, const uint8_t*, Tiles, int64_t, int64_t, float*, int64_t);
  // Rows and tiles alike, in two ranges split at a tile (a last tile of 1
  // to 16 rows), as threads split them. Without `natural_order` the
  // activations are quantized for the weight type (Q4_0 on VNNI reorders).
  auto agree = [](RowsKernel rows, TilesKernel tiles, bool natural_order, int64_t max_m) {
    for (WeightForm form : {kQ8, kQ4, kQ8x16, kQ4x16})
      for (const Case& c : kCases) {
        if (!storable(form, c.K) || c.M > max_m) continue;
        Tensor a = random_f32({c.M, c.K}, 8), w = stored_as(random_f32({c.N, c.K}, 9), form);
        const bool tiled = form.tiles != Tiles::None;
        QuantizedActs q;  // tiles take the activations in natural order, as rows on AVX2 do
        quantize_acts(a.f32(), c.M, c.K, c.K, q, natural_order || tiled ? DType::Q8_0 : form.dtype);
        const auto* data = static_cast<const uint8_t*>(w.data);
        std::vector<float> fast(size_t(c.M * c.N)), plain(size_t(c.M * c.N));
        const int64_t split = std::min<int64_t>(c.N, kInterleave);
        for (auto [n0, n1] : {std::pair{int64_t(0), split}, std::pair{split, c.N}}) {
          if (tiled) {
            tiles(q, data, form.tiles, n0, n1, fast.data(), c.N);
            interleaved_gemv_portable(q, data, form.tiles, n0, n1, plain.data(), c.N);
          } else {
            rows(q, data, form.dtype, n0, n1, fast.data(), c.N);
            quant_gemv_portable(q, data, form.dtype, n0, n1, plain.data(), c.N);
          }
        }
        for (size_t i = 0; i < fast.size(); ++i)
          EXPECT_NEAR(fast[i], plain[i], 1e-4 * (1 + std::abs(plain[i])))
              << form_name(form) << " M=" << c.M << " N=" << c.N << " K=" << c.K;
      }
  };
  // What this CPU takes (decode shapes).
  agree(quant_gemv, interleaved_gemv, false, 4);
  // The tiles' GEMM, which takes every M from 2 (passes of 4 rows, then 3,
  // 2 or 1; prefetching the next tiles on the first).
  agree(quant_gemv, interleaved_gemm, false, 1 << 20);
  // The AVX2 kernels (CPUs without VNNI), whatever ARCHETYPE_CPU says,
  // decode and prompt shapes; they take the activations in natural order.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c"))
    agree(quant_gemv_avx2, interleaved_gemv_avx2, true, 1 << 20);
  for (const Case& c : kCases) {
    if (c.M > 4) continue;
    Tensor a = random_f32({c.M, c.K}, 10), w = random_f32({c.N, c.K}, 11), stored = convert_to(w, DType::BF16);
    Tensor want = run_matmul("reference", a, to_f32(stored));
    std::vector<float> got(size_t(c.M * c.N));
    gemv(GemvArgs{a.f32(), c.M, c.K, stored.data, DType::BF16, c.K, 0, c.N, got.data(), c.N});
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want.f32()[i], 1e-5 * (1 + std::abs(want.f32()[i])));
  }
}

// The AVX2 activation quantizer gives what the plain rule does: the
// block's largest |x| maps to 127, values rounded to nearest, ties to even.
TEST(CpuMatmul, Avx2QuantizerMatchesThePlainRule) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) GTEST_SKIP() << "no AVX2 here";
  Tensor a = random_f32({4, 32}, 21);
  a.f32()[32 + 5] = 40.0f;                          // an outlier sets the scale
  for (int i = 64; i < 96; ++i) a.f32()[i] = 0.0f;  // an all-zero block
  // Ties: with 127 the largest, the scale is 1 and x.5 rounds to even.
  const float ties[] = {127.0f, 2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 126.5f, -2.5f};
  for (int i = 0; i < 32; ++i) a.f32()[96 + i] = ties[i % 8];
  for (int row = 0; row < 4; ++row) {
    const float* v = a.f32() + row * 32;
    int8_t q[32];
    float scale, scale_sum;
    int32_t sum;
    quantize_block_avx2(v, q, scale, scale_sum, sum);
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(v[i]));
    const float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
    int32_t want_sum = 0;
    for (int i = 0; i < 32; ++i) {
      const int8_t want = int8_t(std::nearbyint(v[i] * inv));
      EXPECT_EQ(q[i], want) << "row " << row << " value " << i;
      want_sum += want;
    }
    EXPECT_EQ(scale, d);
    EXPECT_EQ(sum, want_sum);
    EXPECT_EQ(scale_sum, d * float(want_sum));
  }
}

TEST(CpuMatmul, Bf16ActivationsAreOptInAndClose) {
  for (WeightForm form : {kBF16, kBF16x64}) {
    if (form.tiles == Tiles::BF16x64 && !has_avx512_bf16_dot()) continue;
    SCOPED_TRACE(form_name(form));
    Tensor a = random_f32({33, 256}, 5), w = stored_as(random_f32({70, 256}, 6), form);
    Tensor want = run_matmul("reference", a, to_f32(w));
    Tensor exact = run_matmul("cpu", a, w);  // the default
    KernelOptions rounding;
    rounding.bf16_activations = true;
    Tensor rounded = run_matmul("cpu", a, w, 0.0f, rounding);
    double exact_err = 0, rounded_err = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      exact_err = std::max(exact_err, double(std::abs(exact.f32()[i] - want.f32()[i])));
      rounded_err = std::max(rounded_err, double(std::abs(rounded.f32()[i] - want.f32()[i])));
    }
    EXPECT_LE(exact_err, 1e-5 * max_abs(want) + 1e-6);  // the default: f32-grade
    if (onednn_has_bf16()) {
      EXPECT_GT(rounded_err, exact_err);  // the option does round
    } else {
      EXPECT_EQ(rounded_err, exact_err);  // nothing to round for: f32 slabs
    }
    EXPECT_LE(rounded_err, 0.01 * max_abs(want));       // by bf16's 8 bits, no more
  }
}

// --check holds a quantized weight's kernel to 2% (its activations are
// quantized too), everything else to the op's own tolerance.
TEST(CpuMatmul, CheckToleranceIsLooserOnlyForQuantizedWeights) {
  const OpTable& t = op_table();
  const Tolerance own = t.find("matmul")->tolerance;
  Tensor a = random_f32({1, 64}, 1), w = random_f32({8, 64}, 2);
  std::vector<Tensor> f32_in{a, w}, q8_in{a, convert_to(w, DType::Q8_0)}, bf16_in{a, convert_to(w, DType::BF16)};
  EXPECT_EQ(t.check_tolerance("matmul", "cpu", f32_in).rel, own.rel);
  EXPECT_EQ(t.check_tolerance("matmul", "cpu", bf16_in).rel, own.rel);
  std::vector<Tensor> bf16x64_in{a, stored_as(w, kBF16x64)};
  EXPECT_EQ(t.check_tolerance("matmul", "cpu", bf16x64_in).rel, own.rel);  // f32-grade, as BF16
  EXPECT_EQ(t.check_tolerance("matmul", "cpu", q8_in).rel, 2e-2);
  EXPECT_EQ(t.check_tolerance("matmul", "reference", q8_in).rel, own.rel);
  EXPECT_EQ(t.check_tolerance("routed_matmul", "cpu", q8_in).rel, 2e-2);
}

TEST(CpuMatmul, ReadsStoredWeightsWithoutWidening) {
  const OpTable& t = op_table();
  Attrs tb = {{"transpose_b", true}}, plain = {{"transpose_b", false}};
  for (DType d : {DType::BF16, DType::F16, DType::Q8_0, DType::Q4_0}) {
    EXPECT_TRUE(t.takes_stored("matmul", "cpu", tb, 1, d)) << dtype_name(d);
    EXPECT_FALSE(t.takes_stored("matmul", "cpu", plain, 1, d)) << dtype_name(d);
    EXPECT_FALSE(t.takes_stored("matmul", "reference", tb, 1, d)) << dtype_name(d);
    EXPECT_TRUE(t.takes_stored("embed", "cpu", {}, 0, d)) << dtype_name(d);
  }
}

// The prepare-weight hook: the matmul asks for tiles where its kernels pay
// for them (BF16 with AVX-512 BF16, Q8_0/Q4_0 with VNNI or AVX2), never on
// the reference path or for a b that is not transposed; embed reads any.
TEST(CpuMatmul, AsksForTilesWhereTheyPay) {
  const OpTable& t = op_table();
  Attrs tb = {{"transpose_b", true}}, plain = {{"transpose_b", false}};
  const bool ints = has_avx512_vnni() || cpu_features().avx2;
  for (auto [form, pays] : {std::pair{kBF16x64, has_avx512_bf16_dot()}, std::pair{kQ8x16, ints}, std::pair{kQ4x16, ints}}) {
    const Tensor w = convert_to(random_f32({32, 64}, 3), form.dtype);
    EXPECT_EQ(t.weight_layout_for("matmul", "cpu", tb, 1, w), pays ? uint8_t(form.tiles) : 0) << form_name(form);
    EXPECT_EQ(t.weight_layout_for("matmul", "cpu", plain, 1, w), 0) << form_name(form);
    EXPECT_EQ(t.weight_layout_for("matmul", "reference", tb, 1, w), 0) << form_name(form);
    EXPECT_EQ(t.weight_layout_for("embed", "cpu", {}, 0, w), kAnyLayout) << form_name(form);
    // The core reads the tiles through what the backend registered.
    const Tensor tiled = stored_as(w, form);
    ASSERT_NE(weight_layout(tiled.layout), nullptr);
    EXPECT_EQ(stored_name(tiled), form_name(form));
    EXPECT_EQ(test::values(to_f32(tiled)), test::values(to_f32(w))) << form_name(form);
  }
  EXPECT_EQ(t.weight_layout_for("matmul", "cpu", tb, 1, random_f32({32, 64}, 3)), 0);  // F32 stays in rows
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// Shapes that are no multiple of a tile, a vector or a block (Phi-3's
// golden: qkv_proj 112 x 80), as rows and as the tiles a loaded model
// holds, for a decode row and prompts of a few rows.
TEST(CpuMatmul, AwkwardShapesMatchTheReference) {
  for (int64_t N : {112, 80, 48, 16})
    for (int64_t K : {80, 48, 24})
      for (int64_t M : {1, 3, 8, 17})
        for (bool tiled : {false, true}) {
          SCOPED_TRACE(std::to_string(M) + " x " + std::to_string(K) + " @ (" + std::to_string(N) + " x " +
                       std::to_string(K) + ")^T" + (tiled ? ", tiles" : ", rows"));
          const Tensor a = random_f32({M, K}, 7), w = convert_to(random_f32({N, K}, 8), DType::BF16);
          const Tensor stored = tiled && has_avx512_bf16_dot() ? stored_as(w, kBF16x64) : w;
          const Tensor want = run_matmul("reference", a, to_f32(w)), got = run_matmul("cpu", a, stored);
          double err = 0;
          for (int64_t i = 0; i < want.numel(); ++i) err = std::max(err, double(std::abs(got.f32()[i] - want.f32()[i])));
          EXPECT_LE(err, 1e-4 * max_abs(want));
        }
}

}  // namespace
}  // namespace arch

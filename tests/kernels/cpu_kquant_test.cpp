// The cpu matmul on k-quant weights (Q4_K, Q5_K, Q6_K rows, as a GGUF file
// maps them): random valid super-blocks written directly, every path the
// kernel takes at decode and prompt sizes held to the product of the
// dequantized weights (within the 2% --check gives quantized weights; the
// integer paths also exactly, up to f32 rounding, to int8 activations times
// the weights), the vector paths to the plain loops, the bf16 rows of the
// prompt path to dequantize_row bit for bit. The suite reruns with
// ARCHETYPE_CPU=avx2 and baseline (tests/CMakeLists.txt), so each ISA's
// dispatch is checked here too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/kquant_dot.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/kernels.h"
#include "tests/kernels/cpu_test_util.h"

namespace arch {
namespace {

const DType kTypes[] = {DType::Q4_K, DType::Q5_K, DType::Q6_K};

void put_f16(uint8_t* p, float v) {
  const uint16_t bits = f32_to_f16(v);
  std::memcpy(p, &bits, 2);
}

// [N, K] of type t: random bytes (any scale byte, nibble and bit pattern is
// a valid value), then each super-block's f16 factors set to a random sign
// and magnitude in [2^-10, 2^-6) (d and dmin; Q6_K's one d).
Tensor random_kquant(DType t, int64_t N, int64_t K, uint32_t seed) {
  Tensor w = Tensor::zeros(t, {N, K});
  std::mt19937 rng(seed);
  auto* bytes = static_cast<uint8_t*>(w.data);
  for (size_t i = 0; i < w.nbytes(); ++i) bytes[i] = uint8_t(rng());
  std::uniform_real_distribution<float> exponent(-10.0f, -6.0f);
  auto factor = [&] { return (rng() & 1 ? -1.0f : 1.0f) * std::exp2(exponent(rng)); };
  const size_t block = kquant_block_bytes(t);
  for (size_t at = 0; at < w.nbytes(); at += block) {
    if (t == DType::Q6_K) {
      put_f16(bytes + at + 208, factor());
    } else {
      put_f16(bytes + at, factor());
      put_f16(bytes + at + 2, factor());
    }
  }
  return w;
}

Tensor random_acts(int64_t M, int64_t K, uint32_t seed) { return test::normal_f32({M, K}, seed); }

using test::max_abs;
using test::run_matmul;

std::string name(DType t, int64_t M, int64_t N, int64_t K) {
  return std::string(dtype_name(t)) + " M=" + std::to_string(M) + " N=" + std::to_string(N) +
         " K=" + std::to_string(K);
}

// What path the kernel takes for M rows on this CPU (as capped): the
// integer kernel for decode, batched steps up to 16 rows on AVX2 and up,
// and prompts where oneDNN has no bf16; else slabs for oneDNN.
enum class Path { Integer, Bf16Slabs, F32Slabs };
Path path_for(int64_t M) {
  if (M <= 4 || (cpu_features().avx2 && (M <= 16 || !onednn_has_bf16()))) return Path::Integer;
  return onednn_has_bf16() ? Path::Bf16Slabs : Path::F32Slabs;
}

TEST(CpuKQuant, PackedScalesUnpackAsTheFormatSays) {
  std::mt19937 rng(1);
  for (int trial = 0; trial < 200; ++trial) {
    uint8_t packed[12];
    for (uint8_t& b : packed) b = uint8_t(rng());
    uint32_t words[4];
    kquant_unpack_scales(packed, words);
    const auto* bytes = reinterpret_cast<const uint8_t*>(words);
    for (int j = 0; j < 8; ++j) {
      uint8_t scale, min;
      kquant_scale_min(j, packed, scale, min);
      EXPECT_EQ(bytes[j], scale) << "sub-block " << j;
      EXPECT_EQ(bytes[8 + j], min) << "sub-block " << j;
    }
  }
}

// One scale per 256 values (the largest |x| maps to 127, nearest, ties to
// even), sums per 16 and scaled sums per 32 in natural order; paired order
// on VNNI for Q4_K / Q5_K only.
TEST(CpuKQuant, ActivationsQuantizePerSuperBlock) {
  const int64_t M = 3, K = 512;
  Tensor x = random_acts(M, K, 2);
  x.f32()[300] = 40.0f;                                  // an outlier sets one super-block's scale
  for (int64_t i = K; i < K + 256; ++i) x.f32()[i] = 0;  // an all-zero super-block
  for (DType t : kTypes)
    for (bool natural : {false, true}) {
      KQuantActs a;
      quantize_kquant_acts(x.f32(), M, K, K, t, a, natural);
      EXPECT_EQ(a.paired, !natural && t != DType::Q6_K && has_avx512_vnni()) << dtype_name(t);
      for (int64_t m = 0; m < M; ++m)
        for (int64_t b = 0; b < K / 256; ++b) {
          const float* v = x.f32() + m * K + b * 256;
          float amax = 0;
          for (int i = 0; i < 256; ++i) amax = std::max(amax, std::abs(v[i]));
          const float d = amax / 127.0f, inv = d != 0 ? 1.0f / d : 0.0f;
          EXPECT_EQ(a.d[size_t(m * (K / 256) + b)], d);
          for (int g = 0; g < 16; ++g) {
            int sum = 0;
            for (int i = 16 * g; i < 16 * (g + 1); ++i) {
              const int8_t want = int8_t(std::nearbyint(v[i] * inv));
              ASSERT_EQ(a.at(m, b * 256 + i), want) << dtype_name(t) << " row " << m << " value " << b * 256 + i;
              sum += want;
            }
            EXPECT_EQ(a.sum16[size_t((m * K + b * 256) / 16 + g)], sum);
          }
          for (int j = 0; j < 8; ++j) {
            const size_t at = size_t((m * K + b * 256) / 16 + 2 * j);
            EXPECT_EQ(a.dsum32[size_t((m * K + b * 256) / 32 + j)], d * float(a.sum16[at] + a.sum16[at + 1]));
          }
        }
    }
}

// Every size through the matmul kernel as the engine runs it: within the
// 2% --check allows quantized weights of the product with the weights
// dequantized (f64 sums), and on each path as close as its arithmetic
// makes it: the integer paths to f32 rounding of int8 activations times the
// weights, bf16 slabs within bf16's 8 bits, f32 slabs to f32 rounding.
TEST(CpuKQuant, MatmulMatchesTheDequantizedProduct) {
  uint32_t seed = 10;
  for (DType t : kTypes)
    for (int64_t K : {256, 512, 2048})
      for (int64_t N : {1, 7, 64, 300})
        for (int64_t M : {1, 2, 5, 16, 17, 70}) {
          const std::string what = name(t, M, N, K);
          Tensor w = random_kquant(t, N, K, ++seed), a = random_acts(M, K, ++seed);
          Tensor got = run_matmul("cpu", a, w);
          Tensor wf = to_f32(w);
          const Path path = path_for(M);
          KQuantActs q;
          quantize_kquant_acts(a.f32(), M, K, K, t, q);
          // Per element: the exact product, int8 activations times the
          // weights, and bounds on what rounding the activations can move it
          // by: to int8, half a step per value (d / 2 · |w|); to bf16, half
          // a unit in the 8th bit of each factor (2^-8 · |a w| for both).
          std::vector<float> exact(size_t(M * N)), of_int8(size_t(M * N)), int8_bound(size_t(M * N)),
              bf16_bound(size_t(M * N));
          for (int64_t m = 0; m < M; ++m)
            for (int64_t n = 0; n < N; ++n) {
              double e = 0, i8 = 0, i8_err = 0, bf16_err = 0;
              for (int64_t k = 0; k < K; ++k) {
                const double wv = wf.f32()[n * K + k], av = a.f32()[m * K + k], d = q.d[size_t((m * K + k) / 256)];
                e += av * wv;
                i8 += double(q.at(m, k)) * d * wv;
                i8_err += d / 2 * std::abs(wv);
                bf16_err += std::ldexp(std::abs(av * wv), -8);
              }
              const size_t i = size_t(m * N + n);
              exact[i] = float(e);
              of_int8[i] = float(i8);
              int8_bound[i] = float(i8_err);
              bf16_bound[i] = float(bf16_err);
            }
          // The tolerance --check holds this kernel to (quantized_check_tolerance).
          std::vector<Tensor> inputs{a, w};
          const Tolerance tol = op_table().check_tolerance("matmul", "cpu", inputs);
          EXPECT_EQ(tol.rel, 2e-2) << what;
          const double scale = max_abs(exact.data(), exact.size());
          ASSERT_GT(scale, 0) << what;
          double drift = 0, worst = 0;
          int64_t beyond = 0;
          for (size_t i = 0; i < exact.size(); ++i) {
            const double g = got.f32()[i];
            drift = std::max(drift, std::abs(g - exact[i]));
            worst = std::max(worst, std::abs(g - (path == Path::Integer ? of_int8[i] : exact[i])));
            const double rounding = path == Path::Integer ? int8_bound[i] : path == Path::Bf16Slabs ? bf16_bound[i] : 0;
            beyond += std::abs(g - exact[i]) > rounding * (1 + 1e-4) + 1e-5 * scale + 1e-5;
          }
          EXPECT_EQ(beyond, 0) << what << ": elements beyond what rounding the activations can give";
          // 2% of the largest output: where there are enough outputs for the
          // largest to stand for their size (one dot product can cancel to
          // near nothing and leave only the rounding).
          if (M * N >= 64) {
            EXPECT_LE(drift, tol.rel * scale + tol.abs) << what;
          }
          // The integer paths: what int8 activations times these weights
          // give, to f32 rounding.
          if (path == Path::Integer) {
            EXPECT_LE(worst, 2e-5 * scale + 1e-5) << what;
          }
        }
}

// The vector kernels this CPU has, called directly whatever ARCHETYPE_CPU
// says, against the plain loops: decode and prompt row counts (every MR
// from 1 to 4 and their mixes), weight rows split in two ranges as threads
// split them.
TEST(CpuKQuant, VectorPathsAgreeWithThePlainLoops) {
  using Kernel = void (*)(const KQuantActs&, const uint8_t*, DType, int64_t, int64_t, float*, int64_t);
  struct Named {
    const char* name;
    Kernel kernel;
    bool natural, here;
  };
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  const bool vnni = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  const Named paths[] = {{"vnni", kquant_gemv_vnni, false, vnni}, {"avx2", kquant_gemv_avx2, true, avx2}};
  if (!avx2 && !vnni) GTEST_SKIP() << "neither AVX2 nor AVX-512 VNNI here";
  for (const Named& p : paths) {
    if (!p.here) continue;
    for (DType t : kTypes)
      for (int64_t K : {256, 768, 2048})
        for (int64_t M : {1, 2, 3, 4, 7}) {
          const int64_t N = 37;
          Tensor w = random_kquant(t, N, K, uint32_t(K + M)), x = random_acts(M, K, uint32_t(3 * K + M));
          KQuantActs a;
          quantize_kquant_acts(x.f32(), M, K, K, t, a, p.natural);
          // VNNI reads Q4_K / Q5_K activations paired: only where this CPU has it.
          if (!p.natural && a.paired != (t != DType::Q6_K)) continue;
          const auto* data = static_cast<const uint8_t*>(w.data);
          std::vector<float> fast(size_t(M * N)), plain(size_t(M * N));
          for (auto [n0, n1] : {std::pair<int64_t, int64_t>{0, 13}, std::pair<int64_t, int64_t>{13, N}}) {
            p.kernel(a, data, t, n0, n1, fast.data(), N);
            kquant_gemv_portable(a, data, t, n0, n1, plain.data(), N);
          }
          const double bound = 1e-5 * max_abs(plain.data(), plain.size()) + 1e-6;
          for (size_t i = 0; i < fast.size(); ++i)
            EXPECT_NEAR(fast[i], plain[i], bound) << p.name << " " << name(t, M, N, K) << " element " << i;
        }
  }
}

// The prompt path's bf16 rows are dequantize_row's values rounded to
// nearest even, bit for bit (the vector path on AVX-512 BF16, else the
// plain one).
TEST(CpuKQuant, Bf16RowsAreTheDequantizedValuesRounded) {
  // Elsewhere the rows are rounded by the very expression this checks against.
  if (!has_avx512_bf16_dot()) GTEST_SKIP() << "the AVX-512 BF16 path is not taken on this CPU (or cap)";
  for (DType t : kTypes) {
    const int64_t K = 1024;
    Tensor w = random_kquant(t, 3, K, 40);
    const size_t row_bytes = quant_row_bytes(t, K);
    std::vector<float> f(static_cast<size_t>(K));
    std::vector<uint16_t> got(static_cast<size_t>(K));
    for (int64_t r = 0; r < 3; ++r) {
      const uint8_t* row = static_cast<const uint8_t*>(w.data) + size_t(r) * row_bytes;
      dequantize_row(t, row, K, f.data());
      dequantize_row_bf16(t, row, K, got.data());
      for (int64_t k = 0; k < K; ++k)
        ASSERT_EQ(got[size_t(k)], f32_to_bf16(f[size_t(k)])) << dtype_name(t) << " row " << r << " value " << k;
    }
  }
}

// Registered as filling its outputs: no path leaves an element unwritten.
TEST(CpuKQuant, WritesEveryOutputElement) {
  for (DType t : kTypes)
    for (int64_t M : {1, 3, 5, 40}) {
      Tensor w = random_kquant(t, 70, 512, 50), a = random_acts(M, 512, 51);
      Tensor got = run_matmul("cpu", a, w, std::nanf(""));
      int64_t skipped = 0;
      for (int64_t i = 0; i < got.numel(); ++i) skipped += std::isnan(got.f32()[i]);
      EXPECT_EQ(skipped, 0) << name(t, M, 70, 512);
    }
}

// Weights stay as stored: the matmul takes the k-quants (so the program
// does not widen them at load); they have no tiles, and mapped rows are
// copied as bytes onto the weight arena's pages (kResidentRows).
TEST(CpuKQuant, ReadsKQuantsAsStoredInRows) {
  const OpTable& ops = op_table();
  Attrs tb = {{"transpose_b", true}}, plain = {{"transpose_b", false}};
  for (DType t : kTypes) {
    EXPECT_TRUE(ops.takes_stored("matmul", "cpu", tb, 1, t)) << dtype_name(t);
    EXPECT_FALSE(ops.takes_stored("matmul", "cpu", plain, 1, t)) << dtype_name(t);
    EXPECT_FALSE(ops.takes_stored("matmul", "reference", tb, 1, t)) << dtype_name(t);
    Tensor w = random_kquant(t, 8, 256, 60);
    EXPECT_EQ(ops.weight_layout_for("matmul", "cpu", tb, 1, w), 0) << dtype_name(t);
    w.mapped = true;
    EXPECT_EQ(ops.weight_layout_for("matmul", "cpu", tb, 1, w), kResidentRows) << dtype_name(t);
  }
}

// MoE experts as a GGUF file stores them: stack keeps the k-quant rows
// (no tiles), and routed_matmul gives each row what the cpu matmul gives
// on the expert it chose, a decode step's few rows and a prompt's many.
TEST(CpuKQuant, ExpertsStackAndRouteAsStored) {
  const int64_t E = 3, N = 20, K = 512, k = 2;
  const OpTable& ops = op_table();
  for (DType t : kTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    EXPECT_TRUE(ops.takes_stored("stack", "cpu", {{"axis", 0}}, 0, t));
    EXPECT_TRUE(ops.takes_stored("routed_matmul", "cpu", {}, 1, t));
    std::vector<Tensor> experts;
    for (int64_t e = 0; e < E; ++e) experts.push_back(random_kquant(t, N, K, uint32_t(80 + e)));
    std::vector<Tensor> stacked{Tensor::zeros(DType::F32, {E, N, K})};
    std::unique_ptr<OpState> none;
    std::string where = "test";
    Attrs axis0 = {{"axis", 0}};
    KernelContext stack_ctx{axis0, experts, stacked, none, 0, where};
    ASSERT_TRUE((*ops.kernel("stack", "cpu"))(stack_ctx).ok());
    ASSERT_EQ(stacked[0].dtype, t);
    EXPECT_EQ(stacked[0].layout, 0);
    for (int64_t S : {1, 30}) {
      Tensor x = random_acts(S, K, uint32_t(90 + S)), idx = Tensor::zeros(DType::I32, {S, k});
      for (int64_t i = 0; i < S * k; ++i) idx.i32()[i] = int32_t((i * 2 + i / k) % E);
      std::vector<Tensor> inputs{x, stacked[0], idx}, got{Tensor::zeros(DType::F32, {S, k, N})};
      Attrs none_attrs = Attrs::object();
      KernelContext ctx{none_attrs, inputs, got, none, 0, where};
      ASSERT_TRUE((*ops.kernel("routed_matmul", "cpu"))(ctx).ok());
      // Each choice against its expert's dequantized rows, exactly, within
      // what rounding the activations can move it by on whichever path the
      // expert's group of rows took (int8 per 256 values, or bf16).
      KQuantActs q;
      quantize_kquant_acts(x.f32(), S, K, K, t, q);
      for (int64_t s = 0; s < S; ++s)
        for (int64_t j = 0; j < k; ++j) {
          const Tensor wf = to_f32(experts[size_t(idx.i32()[s * k + j])]);
          for (int64_t n = 0; n < N; ++n) {
            double exact = 0, int8_err = 0, bf16_err = 0;
            for (int64_t i = 0; i < K; ++i) {
              const double w = wf.f32()[n * K + i], a = x.f32()[s * K + i];
              exact += a * w;
              int8_err += q.d[size_t((s * K + i) / 256)] / 2 * std::abs(w);
              bf16_err += std::ldexp(std::abs(a * w), -8);
            }
            EXPECT_NEAR(got[0].f32()[(s * k + j) * N + n], exact, std::max(int8_err, bf16_err) * (1 + 1e-4) + 1e-4)
                << "S " << S << " row " << s << " choice " << j << " n " << n;
          }
        }
    }
  }
}

TEST(CpuKQuant, RefusesRowsOfPartSuperBlocks) {
  Tensor w = Tensor::zeros(DType::Q4_K, {4, 384}), a = random_acts(1, 384, 70);
  const std::string message = test::kernel_message("cpu", "matmul", {a, w}, {Tensor::zeros(DType::F32, {1, 4})},
                                                   {{"transpose_b", true}});
  EXPECT_NE(message.find("super-blocks of 256"), std::string::npos) << message;
}

}  // namespace
}  // namespace arch

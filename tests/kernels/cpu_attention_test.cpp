// The cpu backend's attention (attention_hwy.cpp) against the reference
// kernel, within the op's tolerance: GQA, prompt and decode shapes, key
// counts across several key blocks, causal and not, windows, softcap, scale.
#include <omp.h>

#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

struct Case {
  int64_t S, T, H, KH, D, Dv;
};

std::string name(const Case& c, const Attrs& a) {
  return "S=" + std::to_string(c.S) + " T=" + std::to_string(c.T) + " H=" + std::to_string(c.H) +
         " KH=" + std::to_string(c.KH) + " D=" + std::to_string(c.D) + " Dv=" + std::to_string(c.Dv) + " " + a.dump();
}

// q scaled up so the scores spread (a near-uniform softmax would hide errors).
void check(const Case& c, const Attrs& attrs, uint64_t seed, float q_scale = 3.0f) {
  Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), seed, q_scale));
  Tensor k = f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), seed + 1, 1.0f));
  Tensor v = f32({c.T, c.KH, c.Dv}, scaled_values(size_t(c.T * c.KH * c.Dv), seed + 2, 1.0f));
  double mx = expect_cpu_matches_reference("attention", {q, k, v}, attrs, name(c, attrs));
  if (c.T > 0 && c.Dv > 0) {
    EXPECT_GT(mx, 0.01) << name(c, attrs);
  }
}

const Case kCases[] = {
    {1, 1, 1, 1, 4, 4},        {1, 9, 2, 1, 8, 8},       {5, 5, 4, 2, 16, 16},    {7, 7, 6, 3, 33, 33},
    {64, 64, 14, 2, 64, 64},   {1, 300, 14, 2, 64, 64},  {3, 260, 4, 4, 17, 17},  {16, 16, 2, 1, 5, 7},
    {20, 150, 8, 2, 40, 24},   {33, 200, 3, 1, 128, 128}, {2, 129, 16, 16, 64, 64}, {40, 40, 1, 1, 1, 3},
    // Groups of 8, 6 and 5 query heads a kv head, taken in one pass (two
    // kv heads: a decode step gives each thread a whole group).
    {1, 200, 16, 2, 64, 64},   {3, 40, 12, 2, 32, 32},   {1, 100, 10, 2, 16, 20}, {24, 24, 10, 2, 48, 48},
    // Decode steps over 4 or more kv heads, 16 keys of every head at a time
    // (whisper's cross-attention: 8 heads, one query each; two groups a kv
    // head; keys ending inside a 16 and inside a value piece).
    {1, 300, 8, 8, 64, 64},    {4, 290, 16, 4, 32, 24},  {2, 262, 12, 12, 16, 16},
};

TEST(CpuAttention, CausalMatchesReference) {
  uint64_t seed = 1;
  for (const Case& c : kCases) check(c, {{"causal", true}}, seed += 3);
}

TEST(CpuAttention, WindowsMatchReference) {
  uint64_t seed = 100;
  for (const Case& c : kCases)
    for (int64_t window : {1, 3, 16, 130}) check(c, {{"causal", true}, {"window", window}}, seed += 3);
}

TEST(CpuAttention, NonCausalMatchesReference) {
  // Cross-attention shapes too: fewer keys than queries (queries past the
  // keys see none under a window, and give zeros).
  const Case extra[] = {{10, 3, 2, 1, 8, 8}, {50, 7, 4, 2, 16, 12}, {17, 0, 2, 2, 8, 8}};
  uint64_t seed = 200;
  for (const Case& c : kCases)
    for (int64_t window : {0, 2, 20}) check(c, {{"causal", false}, {"window", window}}, seed += 3);
  for (const Case& c : extra)
    for (int64_t window : {0, 2, 6}) {
      Attrs a = {{"causal", false}, {"window", window}};
      Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), seed, 3.0f));
      Tensor k = f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), seed + 1, 1.0f));
      Tensor v = f32({c.T, c.KH, c.Dv}, scaled_values(size_t(c.T * c.KH * c.Dv), seed + 2, 1.0f));
      seed += 3;
      expect_cpu_matches_reference("attention", {q, k, v}, a, name(c, a));
    }
}

TEST(CpuAttention, SoftcapAndScale) {
  uint64_t seed = 300;
  for (const Case& c : kCases) {
    check(c, {{"causal", true}, {"softcap", 50.0}, {"scale", 0.0625}}, seed += 3, 20.0f);
    check(c, {{"causal", true}, {"softcap", 5.0}, {"window", 4}}, seed += 3, 4.0f);
    check(c, {{"causal", false}, {"softcap", 30.0}, {"scale", 0.5}}, seed += 3);
  }
}

// Decode over many keys splits them between the threads and combines the
// shares' softmax sums: uneven shares (3 threads), windows wider than a
// share, rows whose visible keys end or start inside one share.
TEST(CpuAttention, DecodeSplitsKeysAcrossThreads) {
  const int before = omp_get_max_threads();
  uint64_t seed = 400;
  for (int threads : {2, 3}) {
    omp_set_num_threads(threads);
    for (const Case& c : {Case{1, 1000, 14, 2, 64, 64}, Case{4, 700, 8, 2, 32, 24}, Case{2, 257, 4, 1, 16, 16},
                          Case{1, 1500, 8, 8, 64, 64}, Case{3, 777, 24, 6, 64, 48}}) {
      check(c, {{"causal", true}}, seed += 3);
      check(c, {{"causal", true}, {"window", 300}}, seed += 3);
      check(c, {{"causal", false}, {"window", 400}}, seed += 3);
      check(c, {{"causal", true}, {"softcap", 30.0}}, seed += 3);
    }
  }
  omp_set_num_threads(before);
}

// K and V as a --kv-f16 cache holds them: the cpu attention reads the F16
// rows as stored, and matches the reference on the same values widened,
// within the op's own tolerance (prompts, decode steps split by keys,
// windows, softcap).
TEST(CpuAttention, ReadsAnF16CacheAsStored) {
  const Tolerance tol = def_of("attention").tolerance;
  uint64_t seed = 500;
  std::vector<Case> cases(std::begin(kCases), std::end(kCases));
  cases.push_back({1, 1000, 14, 2, 64, 64});
  cases.push_back({2, 257, 4, 1, 16, 16});
  for (const Case& c : cases)
    for (const Attrs& attrs : {Attrs{{"causal", true}}, Attrs{{"causal", true}, {"window", 16}},
                               Attrs{{"causal", true}, {"softcap", 30.0}}, Attrs{{"causal", false}}}) {
      seed += 3;
      Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), seed, 3.0f));
      Tensor k = convert_to(f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), seed + 1, 1.0f)), DType::F16);
      Tensor v = convert_to(f32({c.T, c.KH, c.Dv}, scaled_values(size_t(c.T * c.KH * c.Dv), seed + 2, 1.0f)), DType::F16);
      auto ref = run_on("reference", "attention", {q, to_f32(k), to_f32(v)}, attrs);
      auto cpu = run_on("cpu", "attention", {q, k, v}, attrs);
      ASSERT_TRUE(ref.ok()) << ref.error().message;
      ASSERT_TRUE(cpu.ok()) << name(c, attrs) << ": " << cpu.error().message;
      const Tensor& want = ref->at(0);
      const Tensor& got = cpu->at(0);
      double mx = 0, worst = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        mx = std::max(mx, double(std::fabs(want.f32()[i])));
        worst = std::max(worst, double(std::fabs(got.f32()[i] - want.f32()[i])));
      }
      EXPECT_LE(worst, tol.rel * mx + tol.abs) << name(c, attrs);
      EXPECT_GT(mx, 0.01) << name(c, attrs);
    }
}

// A query that sees no key gives zeros (the reference's rule), not NaN.
TEST(CpuAttention, QueriesSeeingNothingAreZero) {
  const int64_t S = 6, T = 2, H = 1, D = 4;
  Tensor q = f32({S, H, D}, scaled_values(S * D, 1, 1.0f));
  Tensor k = f32({T, H, D}, scaled_values(T * D, 2, 1.0f));
  Tensor v = f32({T, H, D}, scaled_values(T * D, 3, 1.0f));
  // Not causal, window 2: query rows sit at positions -4..1; row r sees keys
  // j with |r - 4 - j| < 2, so rows 0..2 see none.
  auto out = run_on("cpu", "attention", {q, k, v}, {{"causal", false}, {"window", 2}});
  ASSERT_TRUE(out.ok()) << out.error().message;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t e = 0; e < D; ++e) EXPECT_EQ((*out)[0].f32()[r * D + e], 0.0f);
  // Row 5 (position 1) sees keys 0 and 1: not zeros.
  double s = 0;
  for (int64_t e = 0; e < D; ++e) s += std::fabs((*out)[0].f32()[5 * D + e]);
  EXPECT_GT(s, 0.0);
}

TEST(CpuAttention, LongUnmaskedAttentionByMatmulMatchesReference) {
  // Both lengths >= 128, not causal, no window: the scores made whole per
  // head (attention_dense.cpp); with GQA and a bias too.
  const Case dense[] = {{200, 150, 4, 4, 64, 64}, {130, 300, 4, 2, 32, 48}, {128, 128, 1, 1, 8, 8}};
  uint64_t seed = 700;
  for (const Case& c : dense) {
    Attrs a = {{"causal", false}};
    Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), seed, 3.0f));
    Tensor k = f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), seed + 1, 1.0f));
    Tensor v = f32({c.T, c.KH, c.Dv}, scaled_values(size_t(c.T * c.KH * c.Dv), seed + 2, 1.0f));
    Tensor b = f32({c.H, c.S, c.T}, scaled_values(size_t(c.H * c.S * c.T), seed + 3, 4.0f));
    expect_cpu_matches_reference("attention", {q, k, v}, a, name(c, a));
    expect_cpu_matches_reference("attention", {q, k, v, b}, a, name(c, a) + " with bias");
    seed += 4;
  }
}

// Scores past 64 MiB a head are made a band of query rows at a time:
// 4,200 queries over 4,100 keys (about SD3's joint attention) are two
// bands, 4,092 rows and 108; with a bias [H, S, T] read at each band's rows.
TEST(CpuAttention, LongAttentionInBandsOfQueryRowsMatchesReference) {
  const Case c{4200, 4100, 2, 1, 8, 8};
  Attrs a = {{"causal", false}};
  Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), 811, 3.0f));
  Tensor k = f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), 812, 1.0f));
  Tensor v = f32({c.T, c.KH, c.Dv}, scaled_values(size_t(c.T * c.KH * c.Dv), 813, 1.0f));
  Tensor b = f32({c.H, c.S, c.T}, scaled_values(size_t(c.H * c.S * c.T), 814, 4.0f));
  expect_cpu_matches_reference("attention", {q, k, v, b}, a, name(c, a) + " in bands, with bias");
}

TEST(CpuAttention, BiasMatchesReference) {
  // T5's position bias [H, S, T]: prompts (transposed keys), decode steps
  // (keys as stored, split across threads past 256 keys), causal and not.
  uint64_t seed = 500;
  for (const Case& c : kCases)
    for (bool causal : {true, false}) {
      Attrs a = {{"causal", causal}, {"scale", 1.0}};
      Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), seed, 1.0f));
      Tensor k = f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), seed + 1, 1.0f));
      Tensor v = f32({c.T, c.KH, c.Dv}, scaled_values(size_t(c.T * c.KH * c.Dv), seed + 2, 1.0f));
      Tensor b = f32({c.H, c.S, c.T}, scaled_values(size_t(c.H * c.S * c.T), seed + 3, 4.0f));
      expect_cpu_matches_reference("attention", {q, k, v, b}, a, name(c, a) + " with bias");
      seed += 4;
    }
}

// value_dim: the values are the first value_dim features of v's rows (a
// latent cache passing its keys as values: DeepSeek's 512 of 576), decode
// and prompt, one kv head for many query heads, F32 and F16 rows.
TEST(CpuAttention, ValueDimReadsTheFirstFeatures) {
  for (const Case& c : {Case{1, 300, 16, 1, 40, 40}, Case{7, 7, 8, 1, 24, 24}, Case{3, 150, 4, 1, 72, 72}}) {
    const int64_t value_dim = c.D - 8;
    Tensor q = f32({c.S, c.H, c.D}, scaled_values(size_t(c.S * c.H * c.D), 5, 3.0f));
    Tensor kv = f32({c.T, c.KH, c.D}, scaled_values(size_t(c.T * c.KH * c.D), 6, 1.0f));
    Attrs attrs = {{"value_dim", value_dim}};
    expect_cpu_matches_reference("attention", {q, kv, kv}, attrs, name(c, attrs));
    // The reference against values cut to their first features.
    std::vector<float> cut;
    for (int64_t t = 0; t < c.T; ++t)
      for (int64_t e = 0; e < value_dim; ++e) cut.push_back(kv.f32()[t * c.D + e]);
    Tensor whole = run1("attention", {q, kv, kv}, attrs);
    Tensor want = run1("attention", {q, kv, f32({c.T, c.KH, value_dim}, cut)});
    ASSERT_EQ(whole.shape, (Dims{c.S, c.H, value_dim}));
    EXPECT_EQ(values(whole), values(want)) << name(c, attrs);
  }
  auto past = infer("attention", {{DType::F32, {Dim::of(1), Dim::of(2), Dim::of(8)}},
                                  {DType::F32, {Dim::of(3), Dim::of(1), Dim::of(8)}},
                                  {DType::F32, {Dim::of(3), Dim::of(1), Dim::of(8)}}},
                    {{"value_dim", 9}, {"causal", false}});
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message.find("value_dim 9 must be in 1..8"), std::string::npos) << past.error().message;
}

TEST(CpuAttention, ErrorsAreTheReferences) {
  // Causal with fewer keys than queries, and an int32 q, past the shape rule.
  std::vector<Tensor> out{Tensor::zeros(DType::F32, {3, 2, 4})};
  Tensor q = f32({3, 2, 4}, scaled_values(24, 1, 1.0f));
  Tensor kv = f32({2, 1, 4}, scaled_values(8, 2, 1.0f));
  std::string ref = kernel_message("reference", "attention", {q, kv, kv}, out, {{"causal", true}});
  EXPECT_NE(ref.find("at least as many keys"), std::string::npos) << ref;
  EXPECT_EQ(kernel_message("cpu", "attention", {q, kv, kv}, out, {{"causal", true}}), ref);
  Tensor qi = i32({3, 2, 4}, std::vector<int32_t>(24, 1));
  ref = kernel_message("reference", "attention", {qi, kv, kv}, out, {{"causal", false}});
  EXPECT_FALSE(ref.empty());
  EXPECT_EQ(kernel_message("cpu", "attention", {qi, kv, kv}, out, {{"causal", false}}), ref);
}

}  // namespace
}  // namespace arch::test

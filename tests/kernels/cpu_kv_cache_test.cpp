// The cpu kv_cache: F32 rows by default, as the reference keeps them; with
// a model loaded with kv_f16 (KernelOptions) F16 rows, rounded to nearest even, and F16 views.
#include "tests/kernels/cpu_test_util.h"

#include <cmath>
#include <iterator>

#include "engine/core/quant.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/kv_cache.h"

namespace arch::test {
namespace {

// x as an F16 row would hold it.
float f16_rounded(float x) { return f16_to_f32(f32_to_f16(x)); }

TEST(CpuKvCache, F32RowsByDefault) {
  Tensor k = f32({2, 1, 3}, random_values(6, 1)), v = f32({2, 1, 3}, random_values(6, 2));
  Runner cpu, ref;
  cpu.backend = "cpu";
  cpu.max_context = ref.max_context = 4;
  auto a = cpu.run("kv_cache", {k, v});
  auto b = ref.run("kv_cache", {k, v});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->at(0).dtype, DType::F32);
  EXPECT_EQ(values(a->at(0)), values(b->at(0)));
  EXPECT_EQ(values(a->at(1)), values(b->at(1)));
}

TEST(CpuKvCache, F16RowsWhenAsked) {
  const int64_t KH = 2, D = 3;
  std::vector<float> k = random_values(3 * KH * D, 3), v = random_values(3 * KH * D, 4);
  Runner r;
  r.backend = "cpu";
  r.max_context = 3;
  r.options.kv_f16 = true;
  auto first = r.run("kv_cache", {f32({2, KH, D}, {k.begin(), k.begin() + 2 * KH * D}),
                                  f32({2, KH, D}, {v.begin(), v.begin() + 2 * KH * D})});
  auto second = r.run("kv_cache", {f32({1, KH, D}, {k.begin() + 2 * KH * D, k.end()}),
                                   f32({1, KH, D}, {v.begin() + 2 * KH * D, v.end()})});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_TRUE(second.ok()) << second.error().message;
  for (int o = 0; o < 2; ++o) {
    const Tensor& all = second->at(size_t(o));
    ASSERT_EQ(all.dtype, DType::F16);
    ASSERT_EQ(all.shape, (Dims{3, KH, D}));
    const std::vector<float>& x = o == 0 ? k : v;
    for (int64_t i = 0; i < all.numel(); ++i)
      EXPECT_EQ(f16_to_f32(static_cast<const uint16_t*>(all.data)[i]), f16_rounded(x[size_t(i)])) << o << " " << i;
  }
  // Rows of the other type into the same cache: it keeps its type, and says so.
  r.max_context = 4;
  r.options.kv_f16 = false;
  std::string msg = run_error(r, "kv_cache", {f32({1, KH, D}, {k.begin(), k.begin() + KH * D}),
                                              f32({1, KH, D}, {v.begin(), v.begin() + KH * D})});
  EXPECT_NE(msg.find("the KV cache holds F16 rows; this call would add F32"), std::string::npos) << msg;
}

// Rows long enough for the vector rounding, with the values where F16
// rounding has edges: ties to even, the subnormals, the largest finite
// value and what rounds past it, infinities. Bit for bit f32_to_f16's.
TEST(CpuKvCache, F16RowsRoundAsTheScalarRounding) {
  std::vector<float> x = random_values(64, 5);
  const float edges[] = {1.0f + 1.0f / 2048,  // halfway between two F16 values: to even (1.0)
                         1.0f + 3.0f / 2048,  // halfway: to even (upwards)
                         65504.0f,   65519.0f, 65520.0f, -65536.0f, 1e-5f, -3e-8f, 6e-8f, 2.98e-8f,
                         0.0f,       -0.0f,    INFINITY, -INFINITY, 1e-40f};
  for (size_t i = 0; i < std::size(edges); ++i) x[3 * i] = edges[i];
  Runner r;
  r.backend = "cpu";
  r.max_context = 4;
  r.options.kv_f16 = true;
  auto out = r.run("kv_cache", {f32({2, 2, 16}, x), f32({2, 2, 16}, x)});
  ASSERT_TRUE(out.ok()) << out.error().message;
  const auto* k = static_cast<const uint16_t*>(out->at(0).data);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(k[i], f32_to_f16(x[i])) << i << ": " << x[i];
}

}  // namespace
}  // namespace arch::test

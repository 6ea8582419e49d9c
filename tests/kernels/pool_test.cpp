#include "tests/kernels/kernel_test_util.h"

#include <limits>

namespace arch::test {
namespace {

std::vector<float> iota(int n, float sign = 1) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = sign * float(i + 1);
  return v;
}

struct Pool {
  int64_t k, s = 0, p = 0;
  bool ceil = false, include_pad = true;
};

Attrs attrs_of(const Pool& q, bool avg) {
  Attrs a = {{"kernel", q.k}, {"stride", q.s}, {"padding", q.p}, {"ceil_mode", q.ceil}};
  if (avg) a["count_include_pad"] = q.include_pad;
  return a;
}

// torch's pooled size: (n + 2p - k (+ s - 1 with ceil)) / s + 1, less one if
// the last window would start at or past n + p.
int64_t out_size(int64_t n, const Pool& q) {
  int64_t s = q.s ? q.s : q.k;
  int64_t o = (n + 2 * q.p - q.k + (q.ceil ? s - 1 : 0)) / s + 1;
  if (q.ceil && (o - 1) * s >= n + q.p) --o;
  return o;
}

// Windows in double from torch's definitions: max over the real cells (padding
// never wins); avg = real-cell sum / (window cells inside [-p, n + p), or real
// cells only without count_include_pad).
std::vector<double> naive_pool(const std::vector<float>& x, int64_t C, int64_t H, int64_t W, const Pool& q,
                               bool avg) {
  const int64_t s = q.s ? q.s : q.k, Ho = out_size(H, q), Wo = out_size(W, q);
  std::vector<double> out;
  for (int64_t c = 0; c < C; ++c)
    for (int64_t oy = 0; oy < Ho; ++oy)
      for (int64_t ox = 0; ox < Wo; ++ox) {
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t real = 0, padded = 0;
        for (int64_t y = oy * s - q.p; y < oy * s - q.p + q.k; ++y)
          for (int64_t xx = ox * s - q.p; xx < ox * s - q.p + q.k; ++xx) {
            if (y < H + q.p && xx < W + q.p) ++padded;
            if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
            ++real;
            double v = x[size_t((c * H + y) * W + xx)];
            mx = std::max(mx, v);
            sum += v;
          }
        out.push_back(avg ? sum / double(q.include_pad ? padded : real) : mx);
      }
  return out;
}

TEST(Pool, MaxHandValues) {
  // x = 1..16 as [1, 4, 4]: 2x2 windows (stride defaults to the kernel)
  Tensor x = f32({1, 4, 4}, iota(16));
  Tensor out = run1("max_pool2d", {x}, {{"kernel", 2}});
  EXPECT_EQ(out.shape, (Dims{1, 2, 2}));
  EXPECT_EQ(values(out), (std::vector<float>{6, 8, 14, 16}));
  // ResNet's k3 s2 p1 on negative values: padding is -inf, never 0
  Tensor neg = run1("max_pool2d", {f32({1, 4, 4}, iota(16, -1))}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}});
  EXPECT_EQ(neg.shape, (Dims{1, 2, 2}));
  EXPECT_EQ(values(neg), (std::vector<float>{-1, -2, -5, -6}));
  // ceil_mode keeps the partial last window: 5x5 -> 3x3
  Tensor ceil = run1("max_pool2d", {f32({1, 5, 5}, iota(25))}, {{"kernel", 2}, {"ceil_mode", true}});
  EXPECT_EQ(ceil.shape, (Dims{1, 3, 3}));
  EXPECT_EQ(values(ceil), (std::vector<float>{7, 9, 10, 17, 19, 20, 22, 24, 25}));
  Tensor floor = run1("max_pool2d", {f32({1, 5, 5}, iota(25))}, {{"kernel", 2}});
  EXPECT_EQ(values(floor), (std::vector<float>{7, 9, 17, 19}));
  // Channels pool separately; a NaN in a window wins (torch propagates it)
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor two = run1("max_pool2d", {f32({2, 2, 2}, {1, nan, 3, 2, 5, 6, 7, 8})}, {{"kernel", 2}});
  EXPECT_EQ(two.shape, (Dims{2, 1, 1}));
  EXPECT_TRUE(std::isnan(two.f32()[0]));
  EXPECT_EQ(two.f32()[1], 8);
}

TEST(Pool, AvgHandValues) {
  Tensor x = f32({1, 4, 4}, iota(16));
  Tensor out = run1("avg_pool2d", {x}, {{"kernel", 2}});
  EXPECT_EQ(values(out), (std::vector<float>{3.5f, 5.5f, 11.5f, 13.5f}));
  // k3 s2 p1: window sums 14, 30, 57, 99 over 9 cells (padding counted) or 4, 6, 6, 9 real ones
  Tensor inc = run1("avg_pool2d", {x}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}});
  expect_close(values(inc), {14 / 9.0, 30 / 9.0, 57 / 9.0, 11}, 1e-6);
  Tensor exc = run1("avg_pool2d", {x}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}, {"count_include_pad", false}});
  expect_close(values(exc), {3.5, 5, 9.5, 11}, 1e-6);
  // ceil_mode: the last window (start 3) runs past the padding; torch divides by
  // the part inside the padded input (2x2 = 4), of which one cell (16) is real
  Tensor ceil = run1("avg_pool2d", {x}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}, {"ceil_mode", true}});
  EXPECT_EQ(ceil.shape, (Dims{1, 3, 3}));
  EXPECT_NEAR(ceil.f32()[8], 16 / 4.0, 1e-6);
  Tensor ceil_exc = run1("avg_pool2d", {x},
                         {{"kernel", 3}, {"stride", 2}, {"padding", 1}, {"ceil_mode", true}, {"count_include_pad", false}});
  EXPECT_NEAR(ceil_exc.f32()[8], 16, 1e-6);
  // Without padding a ceil_mode window is divided by its real cells either way
  Tensor c5 = run1("avg_pool2d", {f32({1, 5, 5}, iota(25))}, {{"kernel", 2}, {"ceil_mode", true}});
  EXPECT_EQ(c5.shape, (Dims{1, 3, 3}));
  EXPECT_NEAR(c5.f32()[2], (5 + 10) / 2.0, 1e-6);
  EXPECT_NEAR(c5.f32()[8], 25, 1e-6);
}

TEST(Pool, MatchDouble) {
  const std::vector<Pool> cases = {
      {.k = 3, .s = 2, .p = 1},
      {.k = 3, .s = 2, .p = 1, .ceil = true},
      {.k = 3, .s = 2, .p = 1, .ceil = true, .include_pad = false},
      {.k = 2},
      {.k = 2, .s = 1},
      {.k = 3, .s = 3, .p = 1, .ceil = true},
      {.k = 4, .s = 3, .p = 2, .include_pad = false},
      {.k = 5, .s = 2, .p = 2, .ceil = true},
      {.k = 7},  // global pooling of a 7x7 map
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Pool& q = cases[i];
    const int64_t C = 3, H = 7, W = q.k == 7 ? 7 : 8;
    std::vector<float> x = random_values(size_t(C * H * W), 40 + i);
    for (bool avg : {false, true}) {
      SCOPED_TRACE("case " + std::to_string(i) + (avg ? " avg" : " max"));
      Tensor out = run1(avg ? "avg_pool2d" : "max_pool2d", {f32({C, H, W}, x)}, attrs_of(q, avg));
      EXPECT_EQ(out.shape, (Dims{C, out_size(H, q), out_size(W, q)}));
      expect_close(values(out), naive_pool(x, C, H, W, q, avg), 1e-6, 1e-6);
    }
  }
}

TEST(Pool, ShapeRule) {
  auto t = [](std::vector<int64_t> d) { return TypedShape{DType::F32, shape_of(d)}; };
  auto stem = infer("max_pool2d", {t({64, 112, 112})}, {{"kernel", 3}, {"stride", 2}, {"padding", 1}});
  ASSERT_TRUE(stem.ok()) << stem.error().message;
  EXPECT_EQ(shape_str(stem->at(0).shape), "[64, 56, 56]");
  // ceil_mode's correction: 5 + 2 - 2 rounded up gives 4 windows, but the 4th
  // would start at 6 >= 5 + 1, so 3
  auto ceil = infer("avg_pool2d", {t({1, 5, 6})}, {{"kernel", 2}, {"padding", 1}, {"ceil_mode", true}});
  ASSERT_TRUE(ceil.ok()) << ceil.error().message;
  EXPECT_EQ(shape_str(ceil->at(0).shape), "[1, 3, 4]");
  auto sym = infer("max_pool2d", {{DType::F32, {Dim::seq(), Dim::of(4), Dim::of(4)}}}, {{"kernel", 2}});
  ASSERT_TRUE(sym.ok()) << sym.error().message;
  EXPECT_EQ(shape_str(sym->at(0).shape), "[seq, 2, 2]");

  auto msg = [&](const std::string& op, TypedShape x, Attrs a) {
    auto r = infer(op, {x}, a);
    return r.ok() ? std::string("ok") : r.error().message;
  };
  EXPECT_EQ(msg("max_pool2d", t({1, 8, 8}), {{"kernel", 3}, {"padding", 2}}),
            "max_pool2d: padding must be between 0 and kernel / 2 = 1, got 2");
  EXPECT_EQ(msg("avg_pool2d", t({1, 8, 8}), {{"kernel", 0}}), "avg_pool2d: kernel must be >= 1, got 0");
  EXPECT_EQ(msg("avg_pool2d", t({1, 8, 8}), {{"kernel", 2}, {"stride", -1}}),
            "avg_pool2d: stride must be >= 0 (0: the kernel), got -1");
  EXPECT_EQ(msg("max_pool2d", t({1, 2, 2}), {{"kernel", 3}}),
            "max_pool2d: the window 3x3 is larger than x [1, 2, 2] padded by 0");
  EXPECT_EQ(msg("max_pool2d", t({8, 8}), {{"kernel", 2}}), "max_pool2d: x must be [C, H, W], got [8, 8]");
  EXPECT_EQ(msg("max_pool2d", {DType::F32, {Dim::of(1), Dim::seq(), Dim::of(4)}}, {{"kernel", 2}}),
            "max_pool2d: x [1, seq, 4] must have concrete (or `_`) H and W");
  EXPECT_EQ(msg("max_pool2d", t({1, 8, 8}), Attrs::object()), "max_pool2d: attribute 'kernel' is required");
  EXPECT_EQ(msg("max_pool2d", t({1, 8, 8}), {{"kernel", 2}, {"count_include_pad", true}}),
            "max_pool2d: unknown attribute 'count_include_pad' (it takes: kernel, stride, padding, ceil_mode)");
}

}  // namespace
}  // namespace arch::test

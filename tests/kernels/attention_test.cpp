#include "tests/kernels/kernel_test_util.h"

#include "kernels/reference/kv_cache.h"

namespace arch::test {
namespace {

struct Dims4 {
  int64_t S, H, KH, D, Dv;
};

// Attention in double, written from the definition: query i (position i)
// of head h reads kv head h / (H / KH); key j is visible if (causal: j <= i)
// and (window w: i - w < j, or |i - j| < w when not causal).
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, Dims4 n, bool causal, int64_t window,
                                    double scale, double softcap) {
  if (scale == 0) scale = 1 / std::sqrt(double(n.D));
  std::vector<double> out(n.S * n.H * n.Dv, 0.0);
  for (int64_t i = 0; i < n.S; ++i)
    for (int64_t h = 0; h < n.H; ++h) {
      int64_t g = h / (n.H / n.KH);
      std::vector<double> s(n.S, -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < n.S; ++j) {
        bool ok = (!causal || j <= i) && (window == 0 || (causal ? i - window < j : std::abs(i - j) < window));
        if (!ok) continue;
        double dot = 0;
        for (int64_t e = 0; e < n.D; ++e) dot += double(q[(i * n.H + h) * n.D + e]) * k[(j * n.KH + g) * n.D + e];
        s[j] = dot * scale;
        if (softcap > 0) s[j] = std::tanh(s[j] / softcap) * softcap;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < n.S; ++j) sum += std::exp(s[j] - mx);
      for (int64_t j = 0; j < n.S; ++j) {
        double p = std::exp(s[j] - mx) / sum;
        for (int64_t e = 0; e < n.Dv; ++e) out[(i * n.H + h) * n.Dv + e] += p * v[(j * n.KH + g) * n.Dv + e];
      }
    }
  return out;
}

struct Qkv {
  Dims4 n;
  std::vector<float> q, k, v;
  Qkv(Dims4 n, uint64_t seed, float amp = 1.0f)
      : n(n),
        q(random_values(n.S * n.H * n.D, seed)),
        k(random_values(n.S * n.KH * n.D, seed + 1)),
        v(random_values(n.S * n.KH * n.Dv, seed + 2)) {
    for (float& x : q) x *= amp;
  }
  std::vector<Tensor> tensors() const {
    return {f32({n.S, n.H, n.D}, q), f32({n.S, n.KH, n.D}, k), f32({n.S, n.KH, n.Dv}, v)};
  }
  // Rows [from, to) of q, k, v, as one call's inputs.
  std::vector<Tensor> rows(int64_t from, int64_t to) const {
    auto slice = [&](const std::vector<float>& x, int64_t row) {
      return std::vector<float>(x.begin() + from * row, x.begin() + to * row);
    };
    int64_t m = to - from;
    return {f32({m, n.H, n.D}, slice(q, n.H * n.D)), f32({m, n.KH, n.D}, slice(k, n.KH * n.D)),
            f32({m, n.KH, n.Dv}, slice(v, n.KH * n.Dv))};
  }
};

TEST(Attention, CausalMatchesNaive) {
  Qkv x({6, 2, 2, 8, 8}, 41, 3.0f);
  Tensor out = run1("attention", x.tensors());
  EXPECT_EQ(out.shape, (Dims{6, 2, 8}));
  expect_close(values(out), naive_attention(x.q, x.k, x.v, x.n, true, 0, 0, 0), 1e-5, 1e-6);
  // The first query sees only the first key: its output is v[0].
  for (int64_t e = 0; e < 8; ++e) EXPECT_FLOAT_EQ(out.f32()[e], x.v[e]);
}

TEST(Attention, NonCausalSeesEveryKey) {
  Qkv x({5, 2, 1, 4, 3}, 42, 2.0f);
  Tensor out = run1("attention", x.tensors(), {{"causal", false}});
  EXPECT_EQ(out.shape, (Dims{5, 2, 3}));
  expect_close(values(out), naive_attention(x.q, x.k, x.v, x.n, false, 0, 0, 0), 1e-5, 1e-6);
}

TEST(Attention, GroupedQueryHeadsReadKvHeadHOverGroup) {
  // H = 4, KH = 2: heads 0, 1 read kv head 0; heads 2, 3 read kv head 1.
  Qkv x({5, 4, 2, 8, 6}, 43, 3.0f);
  Tensor out = run1("attention", x.tensors());
  EXPECT_EQ(out.shape, (Dims{5, 4, 6}));
  expect_close(values(out), naive_attention(x.q, x.k, x.v, x.n, true, 0, 0, 0), 1e-5, 1e-6);
  // Position 0 attends to key 0 only: head h's output is v[0, h / 2].
  for (int64_t h = 0; h < 4; ++h)
    for (int64_t e = 0; e < 6; ++e) EXPECT_FLOAT_EQ(out.f32()[h * 6 + e], x.v[(h / 2) * 6 + e]) << h;
}

TEST(Attention, SlidingWindowOfTwo) {
  Qkv x({6, 2, 1, 4, 4}, 44, 3.0f);
  Tensor out = run1("attention", x.tensors(), {{"window", 2}});
  auto want = naive_attention(x.q, x.k, x.v, x.n, true, 2, 0, 0);
  expect_close(values(out), want, 1e-5, 1e-6);
  // ... and it differs from full causal attention past the window.
  auto full = naive_attention(x.q, x.k, x.v, x.n, true, 0, 0, 0);
  double diff = 0;
  for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::fabs(want[i] - full[i]));
  EXPECT_GT(diff, 1e-3);
}

TEST(Attention, SoftcapAndExplicitScale) {
  Qkv x({5, 2, 2, 8, 8}, 45, 10.0f);  // large scores so the cap bites
  Tensor out = run1("attention", x.tensors(), {{"softcap", 2.0}, {"scale", 0.5}});
  expect_close(values(out), naive_attention(x.q, x.k, x.v, x.n, true, 0, 0.5, 2.0), 1e-5, 1e-6);
}

TEST(Attention, KvCacheDecodeEqualsPrefill) {
  Qkv x({5, 4, 2, 8, 8}, 46, 3.0f);
  Runner all;
  all.max_context = 16;
  auto prefill = all.run("attention", x.tensors(), {{"cache", true}});
  ASSERT_TRUE(prefill.ok()) << prefill.error().message;
  const Tensor& full = prefill->at(0);  // [5, 4, 8]
  expect_close(values(full), naive_attention(x.q, x.k, x.v, x.n, true, 0, 0, 0), 1e-5, 1e-6);

  Runner steps;
  steps.max_context = 16;
  auto first = steps.run("attention", x.rows(0, 3), {{"cache", true}});
  ASSERT_TRUE(first.ok()) << first.error().message;
  const int64_t row = 4 * 8;  // floats per query row
  for (int64_t i = 0; i < 3 * row; ++i) EXPECT_NEAR(first->at(0).f32()[i], full.f32()[i], 1e-6);
  for (int64_t t = 3; t < 5; ++t) {
    auto step = steps.run("attention", x.rows(t, t + 1), {{"cache", true}});
    ASSERT_TRUE(step.ok()) << step.error().message;
    ASSERT_EQ(step->at(0).shape, (Dims{1, 4, 8}));
    for (int64_t i = 0; i < row; ++i) EXPECT_NEAR(step->at(0).f32()[i], full.f32()[t * row + i], 1e-6) << t;
  }
  auto* c = dynamic_cast<KvCache*>(steps.state.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->len, 5);
  EXPECT_EQ(c->capacity(), 16);
}

TEST(Attention, KvCacheWithWindow) {
  Qkv x({6, 2, 1, 4, 4}, 47, 3.0f);
  Tensor want = run1("attention", x.tensors(), {{"window", 2}});
  Runner steps;
  steps.max_context = 8;
  ASSERT_TRUE(steps.run("attention", x.rows(0, 4), {{"cache", true}, {"window", 2}}).ok());
  for (int64_t t = 4; t < 6; ++t) {
    auto step = steps.run("attention", x.rows(t, t + 1), {{"cache", true}, {"window", 2}});
    ASSERT_TRUE(step.ok()) << step.error().message;
    for (int64_t i = 0; i < 2 * 4; ++i) EXPECT_NEAR(step->at(0).f32()[i], want.f32()[t * 8 + i], 1e-6);
  }
}

TEST(Attention, KvCacheOverflowIsAnError) {
  Qkv x({5, 2, 2, 4, 4}, 48);
  Runner r;
  r.max_context = 4;
  r.where = "layers.3.attn";
  ASSERT_TRUE(r.run("attention", x.rows(0, 3), {{"cache", true}}).ok());
  std::string msg = run_error(r, "attention", x.rows(3, 5), {{"cache", true}});
  EXPECT_NE(msg.find("layers.3.attn"), std::string::npos) << msg;
  EXPECT_NE(msg.find("KV cache full: 4 positions"), std::string::npos) << msg;
  // The failed call left the cache as it was: one more row still fits.
  EXPECT_EQ(dynamic_cast<KvCache*>(r.state.get())->len, 3);
  ASSERT_TRUE(r.run("attention", x.rows(3, 4), {{"cache", true}}).ok());
  EXPECT_EQ(dynamic_cast<KvCache*>(r.state.get())->len, 4);
}

TEST(Attention, CacheNeedsACapacity) {
  Qkv x({2, 1, 1, 4, 4}, 49);
  Runner r;  // max_context 0
  std::string msg = run_error(r, "attention", x.tensors(), {{"cache", true}});
  EXPECT_NE(msg.find("max_context"), std::string::npos) << msg;
}

TEST(Attention, ShapeRule) {
  auto s = [](int64_t h, int64_t d) { return TypedShape{DType::F32, {Dim::seq(), Dim::of(h), Dim::of(d)}}; };
  auto ok = infer("attention", {s(8, 64), s(2, 64), s(2, 32)});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(shape_str(ok->at(0).shape), "[seq, 8, 32]");
  auto gqa = infer("attention", {s(6, 64), s(4, 64), s(4, 64)});
  ASSERT_FALSE(gqa.ok());
  EXPECT_EQ(gqa.error().message,
            "attention: query heads 6 must be a multiple of kv heads 4 (q [seq, 6, 64], k [seq, 4, 64], v [seq, 4, 64])");
  auto dim = infer("attention", {s(8, 64), s(2, 32), s(2, 32)});
  ASSERT_FALSE(dim.ok());
  EXPECT_NE(dim.error().message.find("head_dim differ"), std::string::npos);
  EXPECT_TRUE(def_of("attention").stateful);
}

}  // namespace
}  // namespace arch::test

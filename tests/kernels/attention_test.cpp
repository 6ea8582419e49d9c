#include "tests/kernels/kernel_test_util.h"

namespace arch::test {
namespace {

struct Dims4 {
  int64_t S, H, KH, D, Dv;
  int64_t T = 0;  // key rows (0: S)
  int64_t keys() const { return T ? T : S; }
};

// Attention in double, written from the definition: query row r sits at
// position i = T - S + r and its head h reads kv head h / (H / KH); key j is
// visible if (causal: j <= i) and (window w: i - w < j, or |i - j| < w when
// not causal).
std::vector<double> naive_attention(const std::vector<float>& q, const std::vector<float>& k,
                                    const std::vector<float>& v, Dims4 n, bool causal, int64_t window,
                                    double scale, double softcap) {
  if (scale == 0) scale = 1 / std::sqrt(double(n.D));
  const int64_t T = n.keys();
  std::vector<double> out(n.S * n.H * n.Dv, 0.0);
  for (int64_t r = 0; r < n.S; ++r)
    for (int64_t h = 0; h < n.H; ++h) {
      const int64_t i = T - n.S + r;
      int64_t g = h / (n.H / n.KH);
      std::vector<double> s(T, -INFINITY);
      double mx = -INFINITY;
      for (int64_t j = 0; j < T; ++j) {
        bool ok = (!causal || j <= i) && (window == 0 || (causal ? i - window < j : std::abs(i - j) < window));
        if (!ok) continue;
        double dot = 0;
        for (int64_t e = 0; e < n.D; ++e) dot += double(q[(r * n.H + h) * n.D + e]) * k[(j * n.KH + g) * n.D + e];
        s[j] = dot * scale;
        if (softcap > 0) s[j] = std::tanh(s[j] / softcap) * softcap;
        mx = std::max(mx, s[j]);
      }
      double sum = 0;
      for (int64_t j = 0; j < T; ++j) sum += std::exp(s[j] - mx);
      for (int64_t j = 0; j < T; ++j) {
        double p = std::exp(s[j] - mx) / sum;
        for (int64_t e = 0; e < n.Dv; ++e) out[(r * n.H + h) * n.Dv + e] += p * v[(j * n.KH + g) * n.Dv + e];
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
        k(random_values(n.keys() * n.KH * n.D, seed + 1)),
        v(random_values(n.keys() * n.KH * n.Dv, seed + 2)) {
    for (float& x : q) x *= amp;
  }
  std::vector<Tensor> tensors() const {
    return {f32({n.S, n.H, n.D}, q), f32({n.keys(), n.KH, n.D}, k), f32({n.keys(), n.KH, n.Dv}, v)};
  }
  // Rows [from, to) of q, k, v, as one call's inputs (S == T).
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

TEST(Attention, QueriesAreTheLastPositionsOfTheKeys) {
  // 2 queries over 5 keys: rows at positions 3 and 4.
  Qkv x({2, 4, 2, 8, 6, /*T=*/5}, 50, 3.0f);
  for (int64_t window : {0, 2}) {
    Tensor out = run1("attention", x.tensors(), {{"window", window}});
    EXPECT_EQ(out.shape, (Dims{2, 4, 6}));
    expect_close(values(out), naive_attention(x.q, x.k, x.v, x.n, true, window, 0, 0), 1e-5, 1e-6);
  }
  // The same as the last two rows of a 5-query pass whose last queries are these.
  Qkv five({5, 4, 2, 8, 6}, 50, 3.0f);
  five.k = x.k;
  five.v = x.v;
  std::copy(x.q.begin(), x.q.end(), five.q.begin() + 3 * 4 * 8);
  Tensor all = run1("attention", five.tensors());
  Tensor last = run1("attention", x.tensors());
  for (int64_t i = 0; i < 2 * 4 * 6; ++i) EXPECT_NEAR(last.f32()[i], all.f32()[3 * 4 * 6 + i], 1e-6) << i;
}

TEST(Attention, CrossAttentionTakesAnyNumberOfKeys) {
  for (int64_t T : {2, 3, 7}) {
    Qkv x({3, 2, 1, 4, 5, T}, 51, 2.0f);
    Tensor out = run1("attention", x.tensors(), {{"causal", false}});
    EXPECT_EQ(out.shape, (Dims{3, 2, 5}));
    expect_close(values(out), naive_attention(x.q, x.k, x.v, x.n, false, 0, 0, 0), 1e-5, 1e-6);
  }
}

TEST(Attention, CausalWithFewerKeysThanQueriesIsAnError) {
  Qkv x({4, 2, 1, 4, 4, 3}, 52);
  Runner r;
  r.where = "layers.2.attn";
  // The shape rule refuses concrete 3 < 4 ...
  std::string msg = run_error(r, "attention", x.tensors());
  EXPECT_NE(msg.find("as many keys as queries"), std::string::npos) << msg;
  // ... and the kernel checks the run-time lengths itself (q seq, k concrete).
  const OpDef& d = def_of("attention");
  Attrs attrs = with_defaults(d, Attrs::object());
  std::vector<Tensor> inputs = x.tensors();
  std::vector<Tensor> outputs = {Tensor::zeros(DType::F32, {4, 2, 4})};
  std::unique_ptr<OpState> state;
  KernelContext ctx{attrs, inputs, outputs, state, 0, r.where};
  Status st = (*op_table().kernel("attention", "reference"))(ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().message,
            "layers.2.attn: attention: causal attention with 4 queries needs at least as many keys, got 3 "
            "(q [4, 2, 4], k [3, 1, 4])");
}

// kv_cache then attention, the way a decoder layer calls them: the whole
// sequence at once, or 3 rows then 1 then 1 through one cache; each call's
// queries must come out as the matching rows of the one pass.
void expect_cached_steps_match_one_pass(int64_t window) {
  Qkv x({5, 4, 2, 8, 8}, 46, 3.0f);
  Attrs attrs = {{"window", window}};
  auto attend = [&](Runner& cache, std::vector<Tensor> qkv) -> Result<std::vector<Tensor>> {
    ARCH_TRY(std::vector<Tensor> kv, cache.run("kv_cache", {qkv[1], qkv[2]}));
    Runner attn;
    return attn.run("attention", {qkv[0], kv[0], kv[1]}, attrs);
  };
  Runner all;
  all.max_context = 16;
  auto one_pass = attend(all, x.tensors());
  ASSERT_TRUE(one_pass.ok()) << one_pass.error().message;
  const Tensor& full = one_pass->at(0);  // [5, 4, 8]
  expect_close(values(full), naive_attention(x.q, x.k, x.v, x.n, true, window, 0, 0), 1e-5, 1e-6);

  Runner steps;
  steps.max_context = 16;
  const int64_t row = 4 * 8;  // floats per query row
  for (auto [from, to] : {std::pair<int64_t, int64_t>{0, 3}, {3, 4}, {4, 5}}) {
    auto step = attend(steps, x.rows(from, to));
    ASSERT_TRUE(step.ok()) << step.error().message;
    ASSERT_EQ(step->at(0).shape, (Dims{to - from, 4, 8}));
    for (int64_t i = 0; i < (to - from) * row; ++i)
      EXPECT_NEAR(step->at(0).f32()[i], full.f32()[from * row + i], 1e-6) << "rows " << from << ".." << to;
  }
}

TEST(Attention, KvCacheStepsEqualOnePass) { expect_cached_steps_match_one_pass(0); }
TEST(Attention, KvCacheStepsEqualOnePassWithAWindow) { expect_cached_steps_match_one_pass(2); }

TEST(Attention, ShapeRule) {
  auto s = [](int64_t h, int64_t d, Dim len = Dim::seq()) {
    return TypedShape{DType::F32, {len, Dim::of(h), Dim::of(d)}};
  };
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
  auto len = infer("attention", {s(8, 64), s(2, 64), s(2, 64, Dim::ctx())});
  ASSERT_FALSE(len.ok());
  EXPECT_NE(len.error().message.find("agree in length"), std::string::npos) << len.error().message;
}

TEST(Attention, ShapeRuleKeyLengths) {
  auto s = [](Dim len) { return TypedShape{DType::F32, {len, Dim::of(2), Dim::of(4)}}; };
  auto call = [&](Dim S, Dim T, bool causal) {
    return infer("attention", {s(S), s(T), s(T)}, {{"causal", causal}});
  };
  // Causal: T is S, ctx (the KV cache's rows), or a concrete length >= S.
  auto cached = call(Dim::seq(), Dim::ctx(), true);
  ASSERT_TRUE(cached.ok()) << cached.error().message;
  EXPECT_EQ(shape_str(cached->at(0).shape), "[seq, 2, 4]");
  EXPECT_TRUE(call(Dim::seq(), Dim::seq(), true).ok());
  EXPECT_TRUE(call(Dim::of(3), Dim::of(5), true).ok());
  EXPECT_TRUE(call(Dim::of(1), Dim::ctx(), true).ok());
  EXPECT_TRUE(call(Dim::seq(), Dim::of(16), true).ok());  // T >= seq checked at run time
  auto fewer = call(Dim::of(5), Dim::of(3), true);
  ASSERT_FALSE(fewer.ok());
  EXPECT_EQ(fewer.error().message,
            "attention: causal attention needs as many keys as queries or more (k length 3 is not 5, ctx, or "
            "a concrete length >= it), got q [5, 2, 4], k [3, 2, 4], v [3, 2, 4]");
  EXPECT_FALSE(call(Dim::of(1), Dim::seq(), true).ok());
  EXPECT_FALSE(call(Dim::ctx(), Dim::seq(), true).ok());
  // Non-causal (cross-attention): any length.
  EXPECT_TRUE(call(Dim::seq(), Dim::of(7), false).ok());
  EXPECT_TRUE(call(Dim::of(5), Dim::of(3), false).ok());
  EXPECT_TRUE(call(Dim::of(1), Dim::seq(), false).ok());
}

TEST(Attention, HasNoCacheOfItsOwn) {
  const OpDef& d = def_of("attention");
  EXPECT_FALSE(d.stateful);
  EXPECT_FALSE(d.view);
  auto s = TypedShape{DType::F32, {Dim::seq(), Dim::of(2), Dim::of(4)}};
  auto cache = infer("attention", {s, s, s}, {{"cache", true}});
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.error().message,
            "attention: unknown attribute 'cache' (it takes: causal, window, scale, softcap, value_dim)");
}

TEST(Attention, BiasIsAddedToTheScores) {
  // T5's position bias: a bias [H, S, T] added before the softmax. A large
  // negative bias on all keys but one leaves that key's value; a bias the
  // same along a row changes nothing (softmax is shift-invariant).
  Qkv x({2, 1, 1, 4, 4}, 7, 1.0f);  // S = T = 2, one head
  auto tensors = x.tensors();
  Tensor pick = f32({1, 2, 2}, {-1e30f, 0.0f, 0.0f, -1e30f});
  tensors.push_back(pick);
  Tensor out = run1("attention", tensors, {{"causal", false}});
  for (int64_t e = 0; e < 4; ++e) {
    EXPECT_FLOAT_EQ(out.f32()[e], x.v[4 + e]);  // row 0 sees only key 1
    EXPECT_FLOAT_EQ(out.f32()[4 + e], x.v[e]);  // row 1 only key 0
  }
  tensors.back() = f32({1, 2, 2}, {3.0f, 3.0f, -2.0f, -2.0f});
  expect_close(values(run1("attention", tensors, {{"causal", false}})),
               naive_attention(x.q, x.k, x.v, x.n, false, 0, 0, 0), 1e-5, 1e-6);
}

TEST(Attention, BiasMustBeHeadsByQueriesByKeys) {
  auto r = infer("attention", {{DType::F32, {Dim::of(3), Dim::of(2), Dim::of(4)}},
                               {DType::F32, {Dim::of(5), Dim::of(2), Dim::of(4)}},
                               {DType::F32, {Dim::of(5), Dim::of(2), Dim::of(4)}},
                               {DType::F32, {Dim::of(2), Dim::of(5), Dim::of(3)}}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("bias must be f32 [heads, q length, k length] = [2, 3, 5]"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace arch::test

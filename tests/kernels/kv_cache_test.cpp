#include "tests/kernels/kernel_test_util.h"

#include "kernels/reference/kv_cache.h"

namespace arch::test {
namespace {

// Rows [from, to) of a [rows, KH, D] tensor held in `x`.
Tensor rows_of(const std::vector<float>& x, int64_t KH, int64_t D, int64_t from, int64_t to) {
  return f32({to - from, KH, D}, std::vector<float>(x.begin() + from * KH * D, x.begin() + to * KH * D));
}

TEST(KvCache, Declaration) {
  const OpDef& d = def_of("kv_cache");
  EXPECT_EQ(d.num_outputs, 2);
  EXPECT_TRUE(d.stateful);
  EXPECT_TRUE(d.view);
  EXPECT_EQ(d.inputs, (std::vector<std::string>{"k", "v?"}));
  EXPECT_TRUE(d.attrs.empty());
}

TEST(KvCache, ShapeRuleReturnsCtxRows) {
  auto s = [](Dim len, int64_t h, int64_t d) { return TypedShape{DType::F32, {len, Dim::of(h), Dim::of(d)}}; };
  auto ok = infer("kv_cache", {s(Dim::seq(), 2, 8), s(Dim::seq(), 2, 6)});
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ(shape_str(ok->at(0).shape), "[ctx, 2, 8]");
  EXPECT_EQ(shape_str(ok->at(1).shape), "[ctx, 2, 6]");
  EXPECT_EQ(ok->at(0).dtype, DType::F32);
  EXPECT_EQ(ok->at(1).dtype, DType::F32);

  auto heads = infer("kv_cache", {s(Dim::seq(), 2, 8), s(Dim::seq(), 4, 8)});
  ASSERT_FALSE(heads.ok());
  EXPECT_EQ(heads.error().message,
            "kv_cache: k and v must agree in seq and kv heads, got k [seq, 2, 8], v [seq, 4, 8]");
  auto len = infer("kv_cache", {s(Dim::seq(), 2, 8), s(Dim::of(3), 2, 8)});
  EXPECT_FALSE(len.ok());
  auto rank = infer("kv_cache", {{DType::F32, {Dim::seq(), Dim::of(16)}}, s(Dim::seq(), 2, 8)});
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.error().message.find("[seq, kv_heads, head_dim]"), std::string::npos);
}

TEST(KvCache, ViewsShowEveryAppendedRow) {
  const int64_t KH = 2, D = 3, Dv = 4;
  std::vector<float> k = random_values(6 * KH * D, 60), v = random_values(6 * KH * Dv, 61);
  Runner r;
  r.max_context = 8;
  auto first = r.run("kv_cache", {rows_of(k, KH, D, 0, 4), rows_of(v, KH, Dv, 0, 4)});
  ASSERT_TRUE(first.ok()) << first.error().message;
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ(first->at(0).shape, (Dims{4, KH, D}));
  EXPECT_EQ(first->at(1).shape, (Dims{4, KH, Dv}));
  EXPECT_EQ(values(first->at(0)), values(rows_of(k, KH, D, 0, 4)));
  EXPECT_EQ(values(first->at(1)), values(rows_of(v, KH, Dv, 0, 4)));

  // The outputs are views of the cache's buffers, which their owners keep alive.
  auto* c = dynamic_cast<KvCache*>(r.state.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->len, 4);
  EXPECT_EQ(c->capacity(), 8);
  EXPECT_EQ(first->at(0).data, c->k.data);
  EXPECT_EQ(first->at(1).data, c->v.data);
  EXPECT_EQ(first->at(0).owner, c->k.owner);
  EXPECT_EQ(first->at(1).owner, c->v.owner);

  auto second = r.run("kv_cache", {rows_of(k, KH, D, 4, 6), rows_of(v, KH, Dv, 4, 6)});
  ASSERT_TRUE(second.ok()) << second.error().message;
  EXPECT_EQ(second->at(0).shape, (Dims{6, KH, D}));
  EXPECT_EQ(second->at(1).shape, (Dims{6, KH, Dv}));
  EXPECT_EQ(values(second->at(0)), k);
  EXPECT_EQ(values(second->at(1)), v);
  // The earlier views still read the rows they held.
  EXPECT_EQ(values(first->at(0)), values(rows_of(k, KH, D, 0, 4)));
  EXPECT_EQ(c->len, 6);

  // Dropping the state (the session ends) leaves the views readable.
  Tensor kept = second->at(0);
  r.state.reset();
  EXPECT_EQ(values(kept), k);
}

TEST(KvCache, StateCarriesAcrossSingleRowCalls) {
  const int64_t KH = 1, D = 2;
  std::vector<float> k = random_values(5 * KH * D, 62), v = random_values(5 * KH * D, 63);
  Runner r;
  r.max_context = 5;
  for (int64_t t = 0; t < 5; ++t) {
    auto out = r.run("kv_cache", {rows_of(k, KH, D, t, t + 1), rows_of(v, KH, D, t, t + 1)});
    ASSERT_TRUE(out.ok()) << out.error().message;
    EXPECT_EQ(out->at(0).shape, (Dims{t + 1, KH, D}));
    EXPECT_EQ(values(out->at(0)), values(rows_of(k, KH, D, 0, t + 1))) << t;
    EXPECT_EQ(values(out->at(1)), values(rows_of(v, KH, D, 0, t + 1))) << t;
  }
  // Separate runners are separate caches.
  Runner other;
  other.max_context = 5;
  auto fresh = other.run("kv_cache", {rows_of(k, KH, D, 4, 5), rows_of(v, KH, D, 4, 5)});
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(fresh->at(0).shape, (Dims{1, KH, D}));
}

TEST(KvCache, OverflowIsAnErrorAndLeavesTheCacheUnchanged) {
  std::vector<float> k = random_values(5 * 2 * 4, 64), v = random_values(5 * 2 * 4, 65);
  Runner r;
  r.max_context = 4;
  r.where = "layers.3.kv";
  ASSERT_TRUE(r.run("kv_cache", {rows_of(k, 2, 4, 0, 3), rows_of(v, 2, 4, 0, 3)}).ok());
  std::string msg = run_error(r, "kv_cache", {rows_of(k, 2, 4, 3, 5), rows_of(v, 2, 4, 3, 5)});
  EXPECT_EQ(msg, "layers.3.kv: kv_cache: KV cache full: 4 positions (holds 3, this call adds 2)");
  auto* c = dynamic_cast<KvCache*>(r.state.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->len, 3);
  // One more row still fits, and the rows are the ones appended.
  auto last = r.run("kv_cache", {rows_of(k, 2, 4, 3, 4), rows_of(v, 2, 4, 3, 4)});
  ASSERT_TRUE(last.ok()) << last.error().message;
  EXPECT_EQ(values(last->at(0)), values(rows_of(k, 2, 4, 0, 4)));
  EXPECT_EQ(c->len, 4);
  msg = run_error(r, "kv_cache", {rows_of(k, 2, 4, 4, 5), rows_of(v, 2, 4, 4, 5)});
  EXPECT_NE(msg.find("KV cache full: 4 positions (holds 4, this call adds 1)"), std::string::npos) << msg;
}

TEST(KvCache, NeedsACapacity) {
  Runner r;  // max_context 0
  std::string msg = run_error(r, "kv_cache", {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {3, 4})});
  EXPECT_EQ(msg, "layers.0.test: kv_cache: needs max_context > 0 to size the KV cache, got 0");
  EXPECT_EQ(r.state, nullptr);
  r.max_context = -3;
  msg = run_error(r, "kv_cache", {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {3, 4})});
  EXPECT_NE(msg.find("max_context > 0"), std::string::npos) << msg;
}

TEST(KvCache, RowsOfAnotherShapeAreRefused) {
  Runner r;
  r.max_context = 4;
  ASSERT_TRUE(r.run("kv_cache", {f32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {3, 4})}).ok());
  std::string msg = run_error(r, "kv_cache", {f32({1, 2, 1}, {1, 2}), f32({1, 2, 1}, {3, 4})});
  EXPECT_NE(msg.find("do not match the KV cache rows [4, 1, 2]"), std::string::npos) << msg;
  msg = run_error(r, "kv_cache", {i32({1, 1, 2}, {1, 2}), f32({1, 1, 2}, {3, 4})});
  EXPECT_NE(msg.find("input 0 must be F32, got I32"), std::string::npos) << msg;
  EXPECT_EQ(dynamic_cast<KvCache*>(r.state.get())->len, 1);
}

// No v: the keys are cached alone (a latent cache whose keys hold the
// values) and both views show them; a cache made so refuses a v later.
TEST(KvCache, KeysAloneServeAsValues) {
  Runner r;
  r.max_context = 5;
  std::vector<float> k = random_values(3 * 1 * 6, 41);
  auto out = r.run("kv_cache", {f32({3, 1, 6}, k), absent()});
  ASSERT_TRUE(out.ok()) << out.error().message;
  ASSERT_EQ(out->size(), 2u);
  EXPECT_EQ(out->at(0).shape, (Dims{3, 1, 6}));
  EXPECT_EQ(out->at(1).shape, (Dims{3, 1, 6}));
  EXPECT_EQ(values(out->at(0)), k);
  EXPECT_EQ(out->at(1).data, out->at(0).data);
  auto* c = dynamic_cast<KvCache*>(r.state.get());
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->v.shape.empty());  // nothing kept for values
  auto shapes = infer("kv_cache", {{DType::F32, {Dim::seq(), Dim::of(1), Dim::of(6)}}, {DType::F32, {}}}, {},
                      {true, false});
  ASSERT_TRUE(shapes.ok()) << shapes.error().message;
  EXPECT_EQ(shape_str((*shapes)[1].shape), "[ctx, 1, 6]");
  std::string msg = run_error(r, "kv_cache", {f32({1, 1, 6}, std::vector<float>(6, 1)), f32({1, 1, 6}, std::vector<float>(6, 2))});
  EXPECT_NE(msg.find("do not match the KV cache rows"), std::string::npos) << msg;
}

}  // namespace
}  // namespace arch::test

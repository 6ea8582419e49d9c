#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <vector>

#include "engine/runtime/sampler.h"

namespace arch {
namespace {

// How often each id came in n draws.
std::map<int, int> draws(Sampler& s, const std::vector<float>& logits, int n) {
  std::map<int, int> seen;
  for (int i = 0; i < n; ++i) seen[s.next(logits)]++;
  return seen;
}

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowestId) {
  std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(l), 1);
  Sampler s(SamplingOptions{});
  EXPECT_EQ(s.next(l), 1);
}

// top_k 1 and top_p 0 keep the likeliest id alone, however hot the
// temperature (top_p 0 once drew id 0 every step: an empty head drawn past
// its end).
TEST(Sampler, TopKOfOneAndTopPOfZeroAreGreedy) {
  std::vector<float> l = {0.5f, 0.1f, 3.0f, 2.9f};
  for (bool by_k : {true, false}) {
    SamplingOptions o;
    o.greedy = false;
    if (by_k) o.top_k = 1;
    else o.top_p = 0.0f;
    o.temperature = 5.0f;
    o.seed = 1;
    Sampler s(o);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(s.next(l), 2) << (by_k ? "top_k 1" : "top_p 0");
  }
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingIt) {
  // softmax(ln 0.6, ln 0.3, ln 0.1) = 0.6, 0.3, 0.1: top-p 0.8 keeps ids 0 and 1.
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingOptions o;
  o.greedy = false;
  o.top_p = 0.8f;
  o.seed = 3;
  Sampler s(o);
  std::map<int, int> seen = draws(s, l, 2000);
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_NEAR(seen[0] / 2000.0, 2.0 / 3.0, 0.05);  // 0.6 / 0.9
}

// A vocabulary's worth, as a decoder's head gives: 300 ids far above the
// rest, so that top-p 0.9 needs a head of about 270 (past the first 64 the
// sampler sorts) and top-k 5 the five best, ties to the lower id.
TEST(Sampler, ALargeVocabularyDrawsFromTheRightHead) {
  const int n = 151936;
  std::vector<float> l(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) l[size_t(i)] = float((i * 7919) % 1000) * 1e-3f;  // 0 .. 1
  std::vector<int> high;
  for (int i = 0; i < 300; ++i) high.push_back((i * 503 + 11) % n);
  for (int i = 0; i < 300; ++i) l[size_t(high[size_t(i)])] = 20.0f + float(i % 3) * 0.01f;
  SamplingOptions o;
  o.greedy = false;
  o.top_p = 0.9f;
  o.seed = 5;
  Sampler p(o);
  std::map<int, int> seen = draws(p, l, 600);
  for (const auto& [id, count] : seen) EXPECT_GE(l[size_t(id)], 20.0f) << "id " << id;
  EXPECT_GT(seen.size(), 150u);  // many of the 300, not the first 64 sorted
  // top-k 5: the 100 ids at 20.02 tie; the 5 kept are the lowest of them.
  std::vector<int> best;
  for (int i = 2; i < 300; i += 3) best.push_back(high[size_t(i)]);
  std::sort(best.begin(), best.end());
  best.resize(5);
  o.top_p = 1.0f;
  o.top_k = 5;
  Sampler k(o);
  std::map<int, int> kept = draws(k, l, 200);
  EXPECT_EQ(kept.size(), 5u);
  for (int id : best) EXPECT_GT(kept[id], 0) << "id " << id;
}

TEST(Sampler, ARowWithNaNIsDecodedGreedily) {
  std::vector<float> l = {0.5f, NAN, 3.0f, 2.9f, NAN};
  SamplingOptions o;
  o.greedy = false;
  o.top_p = 0.5f;
  Sampler s(o);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.next(l), argmax(l));
}

TEST(Sampler, SeededAndReproducible) {
  std::vector<float> l(100);
  for (int i = 0; i < 100; ++i) l[i] = float(i % 7) * 0.3f;
  SamplingOptions o;
  o.greedy = false;
  o.seed = 42;
  Sampler a(o), b(o);
  o.seed = 43;
  Sampler c(o);
  std::vector<int> xa, xb, xc;
  for (int i = 0; i < 50; ++i) {
    xa.push_back(a.next(l));
    xb.push_back(b.next(l));
    xc.push_back(c.next(l));
  }
  EXPECT_EQ(xa, xb);
  EXPECT_NE(xa, xc);
}

// Greedy draws of a row that does not change, as a decode step's would if
// the model saw nothing: the penalties alone move the choice.
std::vector<int32_t> greedy_draws(const SamplingOptions& o, const std::vector<float>& l, int n) {
  Sampler s(o);
  std::vector<int32_t> out;
  for (int i = 0; i < n; ++i) out.push_back(s.next(l));
  return out;
}

TEST(Sampler, AFrequencyPenaltyGrowsWithEachDraw) {
  // 0.15 per draw: [1.0, 0.9, 0.5] -> [0.85, 0.9, 0.5] -> [0.85, 0.75, 0.5]
  // -> ... -> [0.4, 0.45, 0.5] after four draws of 0 and three of 1.
  SamplingOptions o;
  o.frequency_penalty = 0.15f;
  EXPECT_EQ(greedy_draws(o, {1.0f, 0.9f, 0.5f}, 8), (std::vector<int32_t>{0, 1, 0, 1, 0, 1, 0, 2}));
}

TEST(Sampler, APresencePenaltyIsOncePerId) {
  // 0.3 once: [1.0, 0.9, 0.5] -> [0.7, 0.9, 0.5] -> [0.7, 0.6, 0.5], and so it stays.
  SamplingOptions o;
  o.presence_penalty = 0.3f;
  EXPECT_EQ(greedy_draws(o, {1.0f, 0.9f, 0.5f}, 5), (std::vector<int32_t>{0, 1, 0, 0, 0}));
  // Negative: the drawn id is favoured.
  o.presence_penalty = -0.3f;
  EXPECT_EQ(greedy_draws(o, {0.9f, 1.0f, 0.5f}, 3), (std::vector<int32_t>{1, 1, 1}));
}

TEST(Sampler, ALogitBiasBansOrForcesIds) {
  const std::vector<float> l = {0.5f, 3.0f, 2.9f, 0.1f};
  SamplingOptions o;
  o.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(greedy_draws(o, l, 2), (std::vector<int32_t>{2, 2}));
  o.logit_bias = {{3, 100.0f}, {7, 100.0f}};  // an id past the row changes nothing
  EXPECT_EQ(greedy_draws(o, l, 2), (std::vector<int32_t>{3, 3}));
  // Sampled at a temperature: a banned id is never drawn, the rest are.
  o.greedy = false;
  o.temperature = 1.0f;
  o.seed = 5;
  o.logit_bias = {{1, -100.0f}};
  Sampler s(o);
  std::map<int, int> seen = draws(s, l, 2000);
  EXPECT_EQ(seen.count(1), 0u);
  EXPECT_GT(seen[2], 1000);  // e^2.9 against e^0.5 + e^0.1
  EXPECT_GT(seen[0], 0);
}

TEST(Sampler, TokenLogprobsAreTheRowsLogSoftmax) {
  // Probabilities 0.5, 0.25, 0.125, 0.125 (ties to the lower id).
  const std::vector<float> l = {std::log(4.0f) + 7, std::log(2.0f) + 7, 7.0f, 7.0f};
  TokenLogprobs t = token_logprobs(l, 2, 3);
  EXPECT_NEAR(t.logprob, std::log(0.125), 1e-6);
  ASSERT_EQ(t.top.size(), 3u);
  EXPECT_EQ(t.top[0].first, 0);
  EXPECT_NEAR(t.top[0].second, std::log(0.5), 1e-6);
  EXPECT_EQ(t.top[1].first, 1);
  EXPECT_NEAR(t.top[1].second, std::log(0.25), 1e-6);
  EXPECT_EQ(t.top[2].first, 2);  // before 3: the same value, the lower id
  EXPECT_TRUE(token_logprobs(l, 0, 0).top.empty());
  EXPECT_EQ(token_logprobs(l, 0, 10).top.size(), 4u);  // no more than the row has
  // A vocabulary's worth: the best five found in one pass, in order.
  std::vector<float> big(151936);
  for (size_t i = 0; i < big.size(); ++i) big[i] = float((i * 7919) % 100003) * 1e-4f;
  TokenLogprobs b = token_logprobs(big, 5, 5);
  std::vector<int32_t> order(big.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t x, int32_t y) { return big[size_t(x)] > big[size_t(y)]; });
  ASSERT_EQ(b.top.size(), 5u);
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(b.top[i].first, order[i]);
  double total = 0;
  const double top = b.top[0].second - big[size_t(order[0])];  // -log(sum of exp)
  for (float x : big) total += std::exp(double(x) + top);
  EXPECT_NEAR(total, 1.0, 1e-4);
}

}  // namespace
}  // namespace arch

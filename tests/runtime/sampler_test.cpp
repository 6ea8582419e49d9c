#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "runtime/sampler.h"

namespace arch {
namespace {

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowestId) {
  std::vector<float> l = {0.1f, 2.0f, -1.0f, 2.0f};
  EXPECT_EQ(argmax(l), 1);
  Sampler s(SamplingOptions{});
  EXPECT_EQ(s.next(l), 1);
}

TEST(Sampler, TopKOfOneIsGreedy) {
  std::vector<float> l = {0.5f, 0.1f, 3.0f, 2.9f};
  SamplingOptions o;
  o.greedy = false;
  o.top_k = 1;
  o.temperature = 5.0f;
  Sampler s(o);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.next(l), 2);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingIt) {
  // softmax(ln 0.6, ln 0.3, ln 0.1) = 0.6, 0.3, 0.1: top-p 0.8 keeps ids 0 and 1.
  std::vector<float> l = {std::log(0.6f), std::log(0.3f), std::log(0.1f)};
  SamplingOptions o;
  o.greedy = false;
  o.top_p = 0.8f;
  o.seed = 3;
  Sampler s(o);
  std::map<int, int> seen;
  for (int i = 0; i < 2000; ++i) seen[s.next(l)]++;
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_NEAR(seen[0] / 2000.0, 2.0 / 3.0, 0.05);  // 0.6 / 0.9
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

}  // namespace
}  // namespace arch

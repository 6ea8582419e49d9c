// A session carries the position and the KV caches between calls: a prompt
// run in chunks, then decode steps, gives the logits of one whole pass.
#include <gtest/gtest.h>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "tests/engine/runtime/toy_model.h"

namespace arch {
namespace {

std::shared_ptr<Model> toy_model() {
  static std::shared_ptr<Model> m = testing::load_toy(5);
  return m;
}

TEST(Session, ChunkedPrefillAndDecodeEqualOneWholePass) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  std::vector<int32_t> ids = {1, 17, 200, 45, 9, 88, 3};
  Session whole(*m, 16);
  auto all = whole.step(ids);
  ASSERT_TRUE(all.ok()) << all.error().message;
  const Tensor& ref = all->at("logits");
  int64_t vocab = ref.dim(-1);

  Session parts(*m, 16);
  std::vector<std::vector<int32_t>> chunks = {{1, 17, 200}, {45, 9}, {88}, {3}};
  int64_t row = 0;
  for (const auto& c : chunks) {
    auto out = parts.step(c);
    ASSERT_TRUE(out.ok()) << out.error().message;
    const Tensor& l = out->at("logits");
    ASSERT_EQ(l.shape, (Dims{int64_t(c.size()), vocab}));
    for (int64_t r = 0; r < int64_t(c.size()); ++r, ++row)
      for (int64_t v = 0; v < vocab; ++v)
        ASSERT_NEAR(l.f32()[r * vocab + v], ref.f32()[row * vocab + v], 1e-4) << "row " << row;
  }
  EXPECT_EQ(parts.position(), 7);
}

TEST(Session, ContextIsSizedOnce) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  Session s(*m, 4);
  ASSERT_TRUE(s.step(std::vector<int32_t>{1, 2, 3}).ok());
  auto over = s.step(std::vector<int32_t>{4, 5});
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message.find("context is full"), std::string::npos) << over.error().message;
  s.reset();
  EXPECT_TRUE(s.step(std::vector<int32_t>{4, 5}).ok());
}

// Rewound to an earlier position, a session continues as if the positions
// after it had never run (a chat turn whose text departs from what it holds).
TEST(Session, RewindForgetsLaterPositions) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  Session fresh(*m, 16);
  auto want = fresh.step(std::vector<int32_t>{1, 17, 200, 8, 8});
  ASSERT_TRUE(want.ok());
  Session s(*m, 16);
  ASSERT_TRUE(s.step(std::vector<int32_t>{1, 17, 200, 45, 9, 88}).ok());
  ASSERT_TRUE(s.rewind(3).ok());
  EXPECT_EQ(s.position(), 3);
  auto got = s.step(std::vector<int32_t>{8, 8});
  ASSERT_TRUE(got.ok()) << got.error().message;
  const Tensor& a = want->at("logits");
  const Tensor& b = got->at("logits");
  const int64_t vocab = a.dim(-1);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t v = 0; v < vocab; ++v) ASSERT_NEAR(b.f32()[r * vocab + v], a.f32()[(3 + r) * vocab + v], 1e-4);
  EXPECT_FALSE(s.rewind(9).ok());  // past the position: refused
}

TEST(Session, UnknownOutputIsAnError) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  Session s(*m, 4);
  auto r = s.step(std::vector<int32_t>{1}, {"pooler_output"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("no output 'pooler_output'"), std::string::npos);
}

TEST(Session, StackedOutputsHaveALayerAxis) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  Session s(*m, 8);
  auto r = s.step(std::vector<int32_t>{1, 2, 3}, {"layer_outputs", "embeddings"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->at("layer_outputs").shape, (Dims{2, 3, 64}));
  EXPECT_EQ(r->at("embeddings").shape, (Dims{3, 64}));
}

}  // namespace
}  // namespace arch

// Several sequences in one call: each sequence's logits are those it has
// alone in a session of its own, whatever it is batched with, wherever its
// slot is, and however far along the others are.
#include <gtest/gtest.h>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"
#include "tests/engine/runtime/toy_model.h"

namespace arch {
namespace {

std::shared_ptr<Model> toy_model(const std::string& backend = "cpu") {
  static std::shared_ptr<Model> cpu = testing::load_toy(5), reference = testing::load_toy(5, "reference");
  return backend == "cpu" ? cpu : reference;
}

// Each prompt's last-row logits and then those of `steps` greedy decode steps, alone.
std::vector<std::vector<float>> solo(const Model& m, const std::vector<int32_t>& prompt, int steps,
                                     std::vector<int32_t>* tokens) {
  Session s(m, 64);
  std::vector<std::vector<float>> rows;
  std::vector<int32_t> next = prompt;
  for (int k = 0; k <= steps; ++k) {
    auto out = s.step(next, {"logits"}, true);
    EXPECT_TRUE(out.ok()) << out.error().message;
    const Tensor& l = out->at("logits");
    const int64_t vocab = l.dim(-1), r = l.numel() / vocab - 1;
    rows.emplace_back(l.f32() + r * vocab, l.f32() + (r + 1) * vocab);
    next = {argmax(rows.back())};
    tokens->push_back(next[0]);
  }
  return rows;
}

class BatchedSessionOn : public ::testing::TestWithParam<std::string> {};

// On the cpu kernels and on the reference ones (both attentions and KV
// caches keep to each sequence's region).
TEST_P(BatchedSessionOn, EachSequenceDecodesAsItDoesAlone) {
  auto m = toy_model(GetParam());
  ASSERT_TRUE(m);
  const std::vector<std::vector<int32_t>> prompts = {{1, 17, 200, 45}, {9}, {88, 3, 3, 7, 120, 5, 6}};
  const int steps = 6;
  std::vector<std::vector<std::vector<float>>> want;
  std::vector<std::vector<int32_t>> want_tokens(prompts.size());
  for (size_t p = 0; p < prompts.size(); ++p) want.push_back(solo(*m, prompts[p], steps, &want_tokens[p]));

  // Slots out of order (prompt p in slot 3 - p), one slot left unused.
  auto b = BatchedSession::make(*m, 4, 64);
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto& s = **b;
  std::vector<int32_t> last(prompts.size());
  for (size_t p = 0; p < prompts.size(); ++p) {
    BatchedSession::Piece piece{int(3 - p), prompts[p]};
    auto l = s.run(std::span(&piece, 1));
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_EQ(l->dim(0), 1);
    for (int64_t v = 0; v < l->dim(1); ++v) ASSERT_NEAR(l->f32()[v], want[p][0][size_t(v)], 1e-4) << "prompt " << p;
    last[p] = argmax(std::span<const float>(l->f32(), size_t(l->dim(1))));
    EXPECT_EQ(s.position(int(3 - p)), int64_t(prompts[p].size()));
  }
  for (int k = 1; k <= steps; ++k) {
    std::vector<BatchedSession::Piece> pieces;
    for (size_t p = 0; p < prompts.size(); ++p) pieces.push_back({int(3 - p), std::span(&last[p], 1)});
    auto l = s.run(pieces);
    ASSERT_TRUE(l.ok()) << l.error().message;
    ASSERT_EQ(l->dim(0), int64_t(prompts.size()));
    const int64_t vocab = l->dim(1);
    for (size_t p = 0; p < prompts.size(); ++p) {
      const float* row = l->f32() + int64_t(p) * vocab;
      for (int64_t v = 0; v < vocab; ++v)
        ASSERT_NEAR(row[v], want[p][size_t(k)][size_t(v)], 1e-4) << "prompt " << p << " step " << k;
      last[p] = argmax(std::span<const float>(row, size_t(vocab)));
      EXPECT_EQ(last[p], want_tokens[p][size_t(k)]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BatchedSessionOn, ::testing::Values("cpu", "reference"));

// A mixed call (a prompt beside decode steps) gives each piece's last row.
TEST(BatchedSession, APromptBesideStepsGivesEachPiecesLastRow) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  std::vector<int32_t> t0;
  auto a = solo(*m, {1, 17}, 1, &t0);
  std::vector<int32_t> t1;
  auto c = solo(*m, {5, 6, 7}, 0, &t1);
  auto b = BatchedSession::make(*m, 2, 32);
  ASSERT_TRUE(b.ok());
  std::vector<int32_t> p0{1, 17}, p1{5, 6, 7};
  BatchedSession::Piece first{0, p0};
  ASSERT_TRUE((*b)->run(std::span(&first, 1)).ok());
  std::vector<BatchedSession::Piece> mixed{{0, std::span(&t0[0], 1)}, {1, p1}};
  auto l = (*b)->run(mixed);
  ASSERT_TRUE(l.ok()) << l.error().message;
  ASSERT_EQ(l->dim(0), 2);
  const int64_t vocab = l->dim(1);
  for (int64_t v = 0; v < vocab; ++v) {
    ASSERT_NEAR(l->f32()[v], a[1][size_t(v)], 1e-4);
    ASSERT_NEAR(l->f32()[vocab + v], c[0][size_t(v)], 1e-4);
  }
}

// The caches' size from the graph's kv_cache nodes: a row of k and one of v
// per layer, position and slot (the toy's config: layers, kv heads, head
// size), in F32.
TEST(BatchedSession, CountsItsCachesBytes) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto s = BatchedSession::make(*m, 3, 40);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const int64_t layers = m->config_int("num_hidden_layers", 0), kv_heads = m->config_int("num_key_value_heads", 0);
  const int64_t head = m->config_int("hidden_size", 0) / m->config_int("num_attention_heads", 1);
  ASSERT_GT(layers * kv_heads * head, 0);
  EXPECT_EQ((*s)->cache_bytes(), layers * 2 * kv_heads * head * 4 * 3 * 40);
}

// A slot copied from another (a beam taking over another's history) goes
// on as the other would: the same logits for the same next token, and its
// own after that; a copy past what the slot holds is refused.
TEST(BatchedSession, ACopiedSlotGoesOnAsItsSource) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto b = BatchedSession::make(*m, 3, 32);
  ASSERT_TRUE(b.ok()) << b.error().message;
  auto& s = **b;
  std::vector<int32_t> prompt{5, 77, 3, 140}, other{9, 9}, next{12};
  std::vector<BatchedSession::Piece> first{{0, prompt}, {2, other}};
  ASSERT_TRUE(s.run(first).ok());
  ASSERT_TRUE(s.copy(0, 2, 3).ok());  // the prompt's first three over what slot 2 held
  EXPECT_EQ(s.position(2), 3);
  std::vector<int32_t> fourth{140};
  std::vector<BatchedSession::Piece> both{{0, next}, {2, fourth}};
  auto l = s.run(both);
  ASSERT_TRUE(l.ok()) << l.error().message;
  std::vector<int32_t> tokens;
  auto want = solo(*m, {5, 77, 3, 140, 12}, 0, &tokens);  // slot 0: the prompt and 12
  auto want2 = solo(*m, {5, 77, 3, 140}, 0, &tokens);     // slot 2: the copied three and 140
  const int64_t vocab = l->dim(1);
  for (int64_t v = 0; v < vocab; ++v) {
    ASSERT_NEAR(l->f32()[v], want[0][size_t(v)], 1e-4) << v;
    ASSERT_NEAR(l->f32()[vocab + v], want2[0][size_t(v)], 1e-4) << v;
  }
  auto far = s.copy(1, 2, 1);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().message.find("slot 1 holds 0 positions, not 1"), std::string::npos) << far.error().message;
}

TEST(BatchedSession, RefusesWhatDoesNotFit) {
  auto m = toy_model();
  ASSERT_TRUE(m);
  auto b = BatchedSession::make(*m, 2, 4);
  ASSERT_TRUE(b.ok());
  std::vector<int32_t> five{1, 2, 3, 4, 5}, one{1};
  BatchedSession::Piece over{0, five};
  auto r = (*b)->run(std::span(&over, 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("context is full"), std::string::npos) << r.error().message;
  std::vector<BatchedSession::Piece> twice{{1, one}, {1, one}};
  EXPECT_FALSE((*b)->run(twice).ok());
  BatchedSession::Piece bad{2, one};
  EXPECT_FALSE((*b)->run(std::span(&bad, 1)).ok());
  EXPECT_FALSE(BatchedSession::make(*m, 0, 4).ok());
}

}  // namespace
}  // namespace arch

// LongRoPE's switch under continuous batching (phi3_longrope): a sequence
// crossing original_max_position_embeddings is recomputed whole with the
// long factors while another, shorter one beside it keeps its short ones;
// each gives transformers' greedy logits (the golden's no-cache reference)
// or what it gives alone.
#include <gtest/gtest.h>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

using testing::compare_f32;
using testing::golden_dir;
using testing::read_json;

TEST(LongRopeBatched, EachSequenceSwitchesAtItsOwnLength) {
  std::string dir = golden_dir("phi3_longrope");
  ARCH_REQUIRE_SHARED(dir);
  auto model = load_model(dir);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const ModelGraph* g = (*model)->token_graph();
  ASSERT_TRUE(g);
  EXPECT_EQ(g->history_changes_past, (std::vector<int64_t>{24}));
  auto prompt = read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  auto want = read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& step_logits = expected->tensors.at("greedy_step_logits");
  const int64_t vocab = step_logits.dim(1);

  // The other sequence: a shorter prompt, alone, for its reference.
  const std::vector<int32_t> other(prompt.begin(), prompt.begin() + 6);
  std::vector<std::vector<float>> other_alone;
  {
    Session s(**model, 64);
    std::vector<int32_t> next = other;
    for (size_t k = 0; k < want.size(); ++k) {
      auto out = s.step(next, {"logits"}, true);
      ASSERT_TRUE(out.ok()) << out.error().message;
      const float* row = out->at("logits").f32();
      other_alone.emplace_back(row, row + vocab);
      next = {argmax(other_alone.back())};
    }
  }

  auto b = BatchedSession::make(**model, 2, 64);
  ASSERT_TRUE(b.ok()) << b.error().message;
  std::vector<int32_t> next0 = prompt, next1 = other;
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<BatchedSession::Piece> pieces = {{1, next1}, {0, next0}};
    auto l = (*b)->run(pieces);
    ASSERT_TRUE(l.ok()) << l.error().message;
    auto c0 = compare_f32(l->f32() + vocab, step_logits.f32() + int64_t(k) * vocab, vocab);
    EXPECT_TRUE(c0.ok()) << "step " << k << " (length " << prompt.size() + k << ") differs by " << c0.max_abs
                         << " (allowed " << c0.bound << ")";
    auto c1 = compare_f32(l->f32(), other_alone[k].data(), vocab);
    EXPECT_TRUE(c1.ok()) << "the other sequence, step " << k << ", differs by " << c1.max_abs;
    next0 = {argmax(std::span<const float>(l->f32() + vocab, size_t(vocab)))};
    next1 = {argmax(std::span<const float>(l->f32(), size_t(vocab)))};
    EXPECT_EQ(next0[0], want[k]) << "step " << k;
  }
  EXPECT_EQ((*b)->position(0), int64_t(prompt.size() + want.size() - 1));  // the last token not fed
}

}  // namespace
}  // namespace arch

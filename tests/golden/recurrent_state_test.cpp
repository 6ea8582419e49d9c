// Qwen3-Next's Gated DeltaNet state in a session (qwen3_next): after the
// prompt it is transformers' cache (conv windows, delta-rule matrices);
// decoding on from it equals recomputing from scratch, whatever the split;
// batched sequences each keep their own; a session goes back only to the
// start, or to a mark.
#include <gtest/gtest.h>

#include "engine/runtime/batched_session.h"
#include "engine/runtime/kv_footprint.h"
#include "engine/runtime/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/safetensors.h"
#include "kernels/reference/ops.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

using testing::compare_f32;
using testing::golden_dir;
using testing::read_json;

struct Golden {
  std::shared_ptr<Model> model;
  std::vector<int32_t> prompt;
  std::vector<int32_t> greedy;  // the 16 tokens transformers generates
};

Golden load(const char* backend = "cpu") {
  Golden g;
  const std::string dir = golden_dir("qwen3_next");
  LoadOptions lo;
  lo.backend = backend;
  auto m = load_model(dir, lo);
  EXPECT_TRUE(m.ok()) << m.error().message;
  if (m.ok()) g.model = std::move(*m);
  g.prompt = read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  g.greedy = read_json(dir + "/expected.json")["greedy"]["new_token_ids"].get<std::vector<int32_t>>();
  return g;
}

// The prompt and the greedy tokens: 88 positions, past one 64-row chunk.
std::vector<int32_t> whole(const Golden& g) {
  std::vector<int32_t> all = g.prompt;
  all.insert(all.end(), g.greedy.begin(), g.greedy.end());
  return all;
}

TEST(RecurrentState, AfterThePromptItIsTransformersCache) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  for (const char* backend : {"cpu", "reference"}) {
    SCOPED_TRACE(backend);
    Golden g = load(backend);
    ASSERT_TRUE(g.model);
    auto expected = read_safetensors(golden_dir("qwen3_next") + "/expected.safetensors");
    ASSERT_TRUE(expected.ok());
    Session s(*g.model, 128);
    auto out = s.step(g.prompt, {"prefill_conv_states", "prefill_recurrent_states"});
    ASSERT_TRUE(out.ok()) << out.error().message;
    for (const char* name : {"prefill_conv_states", "prefill_recurrent_states"}) {
      const Tensor& got = out->at(name);
      const Tensor& want = expected->tensors.at(name);
      ASSERT_EQ(got.shape, want.shape) << name;
      auto c = compare_f32(got.f32(), want.f32(), want.numel());
      EXPECT_TRUE(c.ok()) << name << " differs by " << c.max_abs << " (allowed " << c.bound << ")";
    }
  }
}

TEST(RecurrentState, DecodingOnEqualsRecomputing) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  Golden g = load();
  ASSERT_TRUE(g.model);
  const std::vector<int32_t> all = whole(g);
  const int64_t n = int64_t(all.size());
  Session once(*g.model, n);
  auto ref = once.step(all, {"logits"});
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  const int64_t vocab = ref->at("logits").dim(1);
  // Splits: a prompt of one chunk and a bit, then single steps; a prompt
  // shorter than the convolution's window; pieces crossing a chunk's end.
  for (const std::vector<int64_t>& pieces : std::vector<std::vector<int64_t>>{
           {72}, {2, 1, 1, 80}, {63, 2, 7}, {64, 24}, {30, 30, 28}}) {
    Session s(*g.model, n);
    size_t p = 0;
    for (int64_t at = 0; at < n;) {
      const int64_t take = std::min(p < pieces.size() ? pieces[p++] : int64_t(1), n - at);  // then single steps
      auto out = s.step(std::span<const int32_t>(all.data() + at, size_t(take)), {"logits"});
      ASSERT_TRUE(out.ok()) << out.error().message;
      auto c = compare_f32(out->at("logits").f32(), ref->at("logits").f32() + at * vocab, take * vocab);
      EXPECT_TRUE(c.ok()) << "split " << ::testing::PrintToString(pieces) << ", positions " << at << ".." << at + take
                          << " differ by " << c.max_abs << " (allowed " << c.bound << ")";
      at += take;
    }
    EXPECT_EQ(s.position(), n);
  }
}

TEST(RecurrentState, BatchedSequencesKeepTheirOwn) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  Golden g = load();
  ASSERT_TRUE(g.model);
  const std::vector<int32_t> other(g.prompt.begin() + 10, g.prompt.begin() + 40);
  // Each alone: its logits at every step.
  auto alone = [&](const std::vector<int32_t>& prompt, size_t steps) {
    std::vector<std::vector<float>> rows;
    Session s(*g.model, 128);
    std::vector<int32_t> next = prompt;
    for (size_t k = 0; k < steps; ++k) {
      auto out = s.step(next, {"logits"}, true);
      EXPECT_TRUE(out.ok()) << out.error().message;
      if (!out.ok()) break;
      const Tensor& l = out->at("logits");
      rows.emplace_back(l.f32(), l.f32() + l.dim(1));
      next = {argmax(rows.back())};
    }
    return rows;
  };
  auto want0 = alone(g.prompt, 8), want1 = alone(other, 8);
  ASSERT_EQ(want0.size(), 8u);
  ASSERT_EQ(want1.size(), 8u);
  auto b = BatchedSession::make(*g.model, 3, 128);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ((*b)->cache_bytes(), 3 * (128 * kv_bytes_per_position(g.model->token_graph()->program) +
                                      state_bytes_per_sequence(g.model->token_graph()->program)));
  const int64_t vocab = int64_t(want0[0].size());
  // Slot 2 first runs a sequence that is released: its state must not leak
  // into the one that follows there.
  std::vector<int32_t> junk(g.prompt.rbegin(), g.prompt.rbegin() + 20);
  std::vector<BatchedSession::Piece> first = {{2, junk}};
  ASSERT_TRUE((*b)->run(first).ok());
  (*b)->release(2);
  std::vector<int32_t> next0 = g.prompt, next1 = other;
  for (size_t k = 0; k < 8; ++k) {
    std::vector<BatchedSession::Piece> pieces = {{2, next1}, {0, next0}};
    auto l = (*b)->run(pieces);
    ASSERT_TRUE(l.ok()) << l.error().message;
    auto c1 = compare_f32(l->f32(), want1[k].data(), vocab);
    auto c0 = compare_f32(l->f32() + vocab, want0[k].data(), vocab);
    EXPECT_TRUE(c0.ok()) << "sequence 0, step " << k << ", differs from alone by " << c0.max_abs;
    EXPECT_TRUE(c1.ok()) << "sequence 1, step " << k << ", differs from alone by " << c1.max_abs;
    next0 = {argmax(std::span<const float>(l->f32() + vocab, size_t(vocab)))};
    next1 = {argmax(std::span<const float>(l->f32(), size_t(vocab)))};
    if (k < g.greedy.size()) {
      EXPECT_EQ(next0[0], g.greedy[k]) << "step " << k;
    }
  }
}

TEST(RecurrentState, StateBytesAreTheWindowsAndMatrices) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  Golden g = load();
  ASSERT_TRUE(g.model);
  const Program& p = g.model->token_graph()->program;
  // 3 Gated DeltaNet layers: a window of 4 inputs over 2 x 32 + 64 = 128
  // channels, and 4 value heads' 16 x 16 matrices; one attention layer's
  // 2 kv heads of 32 keys and values a position.
  EXPECT_EQ(state_bytes_per_sequence(p), 3 * (128 * 4 + 4 * 16 * 16) * 4);
  EXPECT_EQ(kv_bytes_per_position(p), 2 * 2 * 32 * 4);
}

TEST(RecurrentState, GoesBackOnlyToTheStart) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  Golden g = load();
  ASSERT_TRUE(g.model);
  Session s(*g.model, 128);
  auto first = s.step(g.prompt, {"logits"}, true);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_TRUE(s.rewind(s.position()).ok());  // where it is: nothing to forget
  auto back = s.rewind(10);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.error().message.find("recurrent state"), std::string::npos) << back.error().message;
  EXPECT_EQ(s.position(), int64_t(g.prompt.size()));  // nothing changed, nothing half-rewound
  auto start = s.back_to(10);                          // no mark: the start
  ASSERT_TRUE(start.ok()) << start.error().message;
  EXPECT_EQ(*start, 0);
  EXPECT_EQ(s.position(), 0);
  auto again = s.step(g.prompt, {"logits"}, true);
  ASSERT_TRUE(again.ok()) << again.error().message;
  const int64_t vocab = first->at("logits").dim(1);
  auto c = compare_f32(again->at("logits").f32(), first->at("logits").f32(), vocab);
  EXPECT_TRUE(c.ok()) << "the prompt again after starting over differs by " << c.max_abs;
  EXPECT_TRUE(s.rewind(0).ok());
  EXPECT_EQ(s.position(), 0);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// A chat's next turn departs from what the session holds inside the last
// reply: the session goes back to its mark (the end of the last prompt)
// and runs on from there, giving what a fresh session gives.
TEST(RecurrentState, BackToTheMarkThenOnEqualsRecomputing) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  Golden g = load();
  ASSERT_TRUE(g.model);
  const std::vector<int32_t> all = whole(g);
  Session s(*g.model, 128);
  ASSERT_TRUE(s.step(std::span<const int32_t>(all.data(), 40), {"logits"}, true).ok());
  s.mark();
  ASSERT_TRUE(s.step(std::span<const int32_t>(all.data() + 40, 20), {"logits"}, true).ok());
  // Position 52 is past the mark and short of where the session is.
  auto at = s.back_to(52);
  ASSERT_TRUE(at.ok()) << at.error().message;
  EXPECT_EQ(*at, 40);
  EXPECT_EQ(s.position(), 40);
  auto on = s.step(std::span<const int32_t>(all.data() + 40, all.size() - 40), {"logits"});
  ASSERT_TRUE(on.ok()) << on.error().message;
  Session fresh(*g.model, 128);
  auto ref = fresh.step(all, {"logits"});
  ASSERT_TRUE(ref.ok()) << ref.error().message;
  const int64_t vocab = ref->at("logits").dim(1);
  auto c = compare_f32(on->at("logits").f32(), ref->at("logits").f32() + 40 * vocab, int64_t(all.size() - 40) * vocab);
  EXPECT_TRUE(c.ok()) << "after going back to the mark, differs by " << c.max_abs << " (allowed " << c.bound << ")";
  // The mark stays: back there again; before it, only the start.
  auto again = s.back_to(70);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 40);
  auto start = s.back_to(30);
  ASSERT_TRUE(start.ok());
  EXPECT_EQ(*start, 0);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

// --check re-runs a recurrent op's reference kernel from a copy of the state
// the fast kernel started from, call after call: a fast gated_delta_rule
// that is the reference's is checked at every step; one that is off is
// named at the first.
TEST(RecurrentState, CheckRerunsTheReferenceFromTheSameState) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  Golden g = load("reference");
  ASSERT_TRUE(g.model);
  OpTable ops;
  define_reference_ops(ops);
  Kernel reference = *ops.kernel("gated_delta_rule", "reference");
  float error = 0;
  ops.add_kernel("gated_delta_rule", "test", [&](KernelContext& ctx) -> Status {
    ARCH_TRY_STATUS(reference(ctx));
    ctx.outputs[0].f32()[0] += error;
    return {};
  });
  const Graph& graph = g.model->token_graph()->graph;
  auto run = [&](CheckStats& stats) -> Status {
    ARCH_TRY(Program p, make_program(graph, ops, g.model->token_graph()->program.weights, "test"));
    RunState state;
    state.max_context = 80;
    state.check = &stats;
    state.ops = &ops;
    // The prompt, then three single steps, each continuing the state.
    int64_t at = 0;
    for (int64_t rows : {72, 1, 1, 1}) {
      Tensor tokens = Tensor::zeros(DType::I32, {rows}), positions = Tensor::zeros(DType::I32, {rows});
      for (int64_t i = 0; i < rows; ++i) tokens.i32()[i] = g.prompt[size_t((at + i) % 72)], positions.i32()[i] = int32_t(at + i);
      ARCH_TRY(auto out, run_program(p, state, {{graph.find_input("tokens"), tokens}, {graph.find_input("positions"), positions}},
                                     DimValues(rows, at + rows), {}));
      at += rows;
    }
    return {};
  };
  CheckStats ok;
  auto r = run(ok);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(ok.checked, 3 * 4);  // 3 DeltaNet layers, 4 calls: every one checked
  error = 1e-2f;
  CheckStats bad;
  auto wrong = run(bad);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("layers.0.linear_attention.o: max abs err"), std::string::npos)
      << wrong.error().message;
  EXPECT_NE(wrong.error().message.find("gated_delta_rule, test kernel vs reference"), std::string::npos)
      << wrong.error().message;
}

}  // namespace
}  // namespace arch

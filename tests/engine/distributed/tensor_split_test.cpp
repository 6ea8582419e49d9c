// The tensor split (engine/distributed/tensor_split.h): what each process
// holds of the goldens' decoders, the refusal that names the op, and the
// split model run as threads against the whole one.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "engine/distributed/pipeline_split.h"
#include "engine/distributed/tensor_split.h"
#include "engine/runtime/model.h"
#include "importer/checkpoint/canonical.h"
#include "engine/runtime/session.h"
#include "kernels/kernels.h"
#include "tests/engine/distributed/thread_collectives.h"
#include "tests/shared_data.h"

namespace arch {
namespace {

using testing::golden_dir;

Graph graph_of(const std::string& golden) {
  LoadOptions opt;
  opt.programs = false;
  auto m = load_model(golden_dir(golden), opt);
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? (*m)->graph() : Graph{};
}

// The part of checkpoint tensor `name` this process binds (whole: absent).
Part part_of(const Graph& g, const std::string& name) {
  for (const auto& w : g.weights)
    if (w.tensor == name) return w.part;
  ADD_FAILURE() << name << " is not bound";
  return {};
}

TEST(EvenRange, SplitsEvenlyAndOnSteps) {
  EXPECT_EQ(even_range(10, 0, 3), std::make_pair(int64_t(0), int64_t(3)));
  EXPECT_EQ(even_range(10, 2, 3), std::make_pair(int64_t(6), int64_t(10)));
  // 5 heads of 16 over 2 processes: 2 and 3 heads.
  EXPECT_EQ(even_range(80, 0, 2, 16), std::make_pair(int64_t(0), int64_t(32)));
  EXPECT_EQ(even_range(80, 1, 2, 16), std::make_pair(int64_t(32), int64_t(80)));
}

TEST(TensorSplit, LlamaHeadsAndColumnsOverTwo) {
  ARCH_REQUIRE_SHARED(golden_dir("llama"));
  const Graph g = graph_of("llama");  // 4 heads, 2 kv heads of 16; FFN 192; vocab 512
  for (int rank = 0; rank < 2; ++rank) {
    TensorSplitReport rep;
    auto s = split_tensors(g, op_table(), rank, 2, &rep);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(rep.all_reduces, 5);  // the embedding, and after each attention and each FFN of 2 layers
    EXPECT_EQ(rep.all_gathers, 1);  // the logits
    EXPECT_TRUE(rep.whole.empty());
    const int64_t r = rank;
    EXPECT_EQ(part_of(*s, "model.layers.1.self_attn.q_proj.weight"), Part::of(0, 32 * r, 32 * r + 32));
    EXPECT_EQ(part_of(*s, "model.layers.1.self_attn.k_proj.weight"), Part::of(0, 16 * r, 16 * r + 16));
    EXPECT_EQ(part_of(*s, "model.layers.1.self_attn.v_proj.weight"), Part::of(0, 16 * r, 16 * r + 16));
    EXPECT_EQ(part_of(*s, "model.layers.1.self_attn.o_proj.weight"), Part::of(1, 32 * r, 32 * r + 32));
    EXPECT_EQ(part_of(*s, "model.layers.0.mlp.up_proj.weight"), Part::of(0, 96 * r, 96 * r + 96));
    EXPECT_EQ(part_of(*s, "model.layers.0.mlp.down_proj.weight"), Part::of(1, 96 * r, 96 * r + 96));
    EXPECT_EQ(part_of(*s, "lm_head.weight"), Part::of(0, 256 * r, 256 * r + 256));
    EXPECT_EQ(part_of(*s, "model.embed_tokens.weight"), Part::of(0, 256 * r, 256 * r + 256));  // by vocabulary rows
    EXPECT_TRUE(part_of(*s, "model.layers.0.input_layernorm.weight").is_whole());
  }
}

TEST(TensorSplit, MoreProcessesThanKvHeadsShareThem) {
  ARCH_REQUIRE_SHARED(golden_dir("llama"));
  const Graph g = graph_of("llama");
  // 4 processes, one query head each; processes 2 and 3 both hold kv head 1.
  auto s = split_tensors(g, op_table(), 3, 4);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(part_of(*s, "model.layers.0.self_attn.q_proj.weight"), Part::of(0, 48, 64));
  EXPECT_EQ(part_of(*s, "model.layers.0.self_attn.k_proj.weight"), Part::of(0, 16, 32));
}

TEST(TensorSplit, HeadsThatDoNotDivideGoWhole) {
  ARCH_REQUIRE_SHARED(golden_dir("phi3"));
  const Graph g = graph_of("phi3");  // 5 heads of 16, one kv head, fused qkv_proj [112, 80]
  auto a = split_tensors(g, op_table(), 0, 2), b = split_tensors(g, op_table(), 1, 2);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(part_of(*a, "model.layers.0.self_attn.o_proj.weight"), Part::of(1, 0, 32));   // 2 heads
  EXPECT_EQ(part_of(*b, "model.layers.0.self_attn.o_proj.weight"), Part::of(1, 32, 80));  // 3 heads
  // Its queries' rows, then the one kv head's keys and values (merged
  // where they meet).
  EXPECT_EQ(part_of(*a, "model.layers.0.self_attn.qkv_proj.weight"), (Part{0, {{0, 32}, {80, 112}}}));
  EXPECT_EQ(part_of(*b, "model.layers.0.self_attn.qkv_proj.weight"), (Part{0, {{32, 112}}}));
}

// A softmax between two large matmuls mixes every column a process would
// hold: the split is refused, naming the weight, the op and its line (the
// residual's norm keeps the output from being gathered in columns).
TEST(TensorSplit, RefusalNamesTheOp) {
  const std::string src =
      "family Mixer\n"
      "config {\n  hidden_size: int = 64\n  inner: int = 256\n}\n"
      "weights {\n  up.weight: [inner, hidden_size]\n  down.weight: [hidden_size, inner]\n}\n"
      "graph step(x: f32[seq, hidden_size]) {\n"
      "  h = softmax(x @ up.weight^T)\n"
      "  output y = rms_norm(x + h @ down.weight^T, null, eps: 1e-5)\n"
      "}\n";
  auto t = dsl::parse_template("mixer.arch", src);
  ASSERT_TRUE(t.ok()) << t.error().message;
  dsl::InstantiateOptions opt;
  opt.tensor_exists = [](const std::string&) { return true; };
  auto in = dsl::instantiate(*t, opt, op_table());
  ASSERT_TRUE(in.ok()) << in.error().message;
  auto s = split_tensors(in->graph, op_table(), 0, 2);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("the graph cannot be split at "), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("weight"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("softmax"), std::string::npos) << s.error().message;
  EXPECT_NE(s.error().message.find("mixer.arch:11:"), std::string::npos) << s.error().message;
}

// Qwen3-Next's linear attention by value heads (2 key heads, 4 value heads
// of 16, q | k | v | z fused per key head): over 2 processes each holds a
// key head and its two value heads; over 4, one value head each, key heads
// held twice. The short convolution holds the channels of its q, k and v.
TEST(TensorSplit, GatedDeltaNetByValueHeads) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  const Graph g = graph_of("qwen3_next");
  const std::string at = "model.layers.0.linear_attn.";
  for (int rank = 0; rank < 2; ++rank) {
    auto s = split_tensors(g, op_table(), rank, 2);
    ASSERT_TRUE(s.ok()) << s.error().message;
    const int64_t r = rank;
    EXPECT_EQ(part_of(*s, at + "in_proj_qkvz.weight"), Part::of(0, 96 * r, 96 * r + 96));
    EXPECT_EQ(part_of(*s, at + "in_proj_ba.weight"), Part::of(0, 4 * r, 4 * r + 4));
    EXPECT_EQ(part_of(*s, at + "conv1d.weight"), (Part{0, {{16 * r, 16 * r + 16}, {32 + 16 * r, 48 + 16 * r}, {64 + 32 * r, 96 + 32 * r}}}));
    EXPECT_EQ(part_of(*s, at + "A_log"), Part::of(0, 2 * r, 2 * r + 2));
    EXPECT_EQ(part_of(*s, at + "out_proj.weight"), Part::of(1, 32 * r, 32 * r + 32));
  }
  auto s = split_tensors(g, op_table(), 1, 4);  // value head 1, of key head 0
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(part_of(*s, at + "in_proj_qkvz.weight"), Part::of(0, 0, 96));
  EXPECT_EQ(part_of(*s, at + "conv1d.weight"), (Part{0, {{0, 16}, {32, 48}, {80, 96}}}));
  EXPECT_EQ(part_of(*s, at + "A_log"), Part::of(0, 1, 2));
  EXPECT_EQ(part_of(*s, at + "out_proj.weight"), Part::of(1, 16, 32));
}

TEST(TensorPart, RowsAreViewsColumnsCopies) {
  Tensor t = Tensor::zeros(DType::F32, {4, 6});
  for (int i = 0; i < 24; ++i) t.f32()[i] = float(i);
  auto rows = tensor_part(t, Part::of(0, 1, 3));
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->shape, (Dims{2, 6}));
  EXPECT_EQ(rows->data, static_cast<void*>(t.f32() + 6));  // a view: nothing copied
  auto cols = tensor_part(t, Part{1, {{0, 2}, {4, 6}}});
  ASSERT_TRUE(cols.ok());
  EXPECT_EQ(cols->shape, (Dims{4, 4}));
  const float want[] = {0, 1, 4, 5, 6, 7, 10, 11};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(cols->f32()[i], want[i]);
  // A Q8_0 row's columns only on whole blocks of 32.
  Tensor q = convert_to(Tensor::zeros(DType::F32, {2, 64}), DType::Q8_0);
  EXPECT_TRUE(tensor_part(q, Part::of(1, 32, 64)).ok());
  auto bad = tensor_part(q, Part::of(1, 16, 64));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("groups of 32"), std::string::npos) << bad.error().message;
}

// Each golden split over 2 and 4 threads as processes: every rank's logits
// equal the whole model's within the f32 tolerance of another summation
// order, and greedy tokens are the same.
void expect_split_matches(const std::string& golden, int ranks, bool pipeline = false) {
  ARCH_REQUIRE_SHARED(golden_dir(golden));
  auto whole = load_model(golden_dir(golden));
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  testing::ThreadGroup group(ranks);
  std::vector<std::unique_ptr<testing::ThreadCollectives>> coll;
  std::vector<std::shared_ptr<Model>> parts;
  for (int r = 0; r < ranks; ++r) {
    coll.push_back(std::make_unique<testing::ThreadCollectives>(group, r));
    LoadOptions opt;
    opt.kernels.collectives = coll.back().get();
    opt.rewrite = [r, ranks, pipeline](const Graph& g, const std::string&) {
      return pipeline ? split_pipeline(g, op_table(), r, ranks) : split_tensors(g, op_table(), r, ranks);
    };
    auto m = load_model(golden_dir(golden), opt);
    ASSERT_TRUE(m.ok()) << m.error().message;
    parts.push_back(*m);
  }
  const std::vector<int32_t> prompt = {1, 438, 309, 258, 92, 411, 30};
  // Rank 0 chooses each next token; in a pipeline only it has the logits,
  // and the others take its choice, as rank 0's session calls tell them.
  std::vector<std::vector<int32_t>> chosen(8);
  std::mutex chosen_mu;
  std::condition_variable chosen_cv;
  auto greedy = [&](const Model& m, std::vector<float>* first_logits, int rank = 0) -> std::vector<int32_t> {
    Session s(m, 64);
    std::vector<int32_t> out;
    std::vector<int32_t> next = prompt;
    for (int i = 0; i < 8; ++i) {
      auto r = s.step(next, pipeline && rank > 0 ? std::vector<std::string>{} : std::vector<std::string>{"logits"},
                      false);
      if (!r.ok()) {
        ADD_FAILURE() << r.error().message;
        if (pipeline && rank == 0 && &m != whole->get()) {  // the others wait no more
          std::lock_guard<std::mutex> l(chosen_mu);
          for (auto& c : chosen) c = {-1};
          chosen_cv.notify_all();
        }
        return out;
      }
      if (pipeline && rank > 0) {
        std::unique_lock<std::mutex> l(chosen_mu);
        chosen_cv.wait(l, [&] { return !chosen[size_t(i)].empty(); });
        if (chosen[size_t(i)][0] < 0) return out;
        out.push_back(chosen[size_t(i)][0]);
        next = {out.back()};
        continue;
      }
      const Tensor& l = r->at("logits");
      const int64_t vocab = l.dim(-1);
      const float* last = l.f32() + l.numel() - vocab;
      if (first_logits && i == 0) first_logits->assign(l.f32(), l.f32() + l.numel());
      out.push_back(int32_t(std::max_element(last, last + vocab) - last));
      next = {out.back()};
      if (pipeline && first_logits != nullptr && rank == 0 && &m != whole->get()) {
        std::lock_guard<std::mutex> l(chosen_mu);
        chosen[size_t(i)] = {out.back()};
        chosen_cv.notify_all();
      }
    }
    return out;
  };
  std::vector<float> want_logits;
  const std::vector<int32_t> want = greedy(**whole, &want_logits);
  std::vector<std::vector<int32_t>> got(static_cast<size_t>(ranks));
  std::vector<std::vector<float>> logits(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] { got[size_t(r)] = greedy(*parts[size_t(r)], &logits[size_t(r)], r); });
  for (auto& t : threads) t.join();
  float scale = 0;
  for (float v : want_logits) scale = std::max(scale, std::abs(v));
  // A pipeline's logits are made on rank 0 alone (the others follow).
  for (int r = 0; r < (pipeline ? 1 : ranks); ++r) {
    EXPECT_EQ(got[size_t(r)], want) << golden << " rank " << r << " of " << ranks;
    ASSERT_EQ(logits[size_t(r)].size(), want_logits.size()) << golden << " rank " << r << " of " << ranks;
    float worst = 0;
    for (size_t i = 0; i < want_logits.size(); ++i) worst = std::max(worst, std::abs(logits[size_t(r)][i] - want_logits[i]));
    EXPECT_LE(worst, 1e-5f * scale + 1e-6f) << golden << " rank " << r << " of " << ranks;
  }
}

// Every output of a prompt step, not only the logits: Qwen3-Next's
// convolution and recurrent states come together from each process's
// channels and heads (some held twice over 4) in the whole model's order.
TEST(TensorSplit, EveryOutputOfAPromptAsOne) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3_next"));
  auto whole = load_model(golden_dir("qwen3_next"));
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  std::vector<std::string> names;
  for (const auto& o : (*whole)->graph().outputs)
    if (std::find(names.begin(), names.end(), o.name) == names.end()) names.push_back(o.name);
  ASSERT_NE(std::find(names.begin(), names.end(), "prefill_recurrent_states"), names.end());
  const std::vector<int32_t> prompt = {1, 438, 309, 258, 92, 411, 30};
  Session one(**whole, 16);
  auto want = one.step(prompt, names);
  ASSERT_TRUE(want.ok()) << want.error().message;
  const int ranks = 4;
  testing::ThreadGroup group(ranks);
  std::vector<NamedTensors> got(ranks);
  std::vector<std::string> errors(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      testing::ThreadCollectives coll(group, r);
      LoadOptions opt;
      opt.kernels.collectives = &coll;
      opt.rewrite = [r](const Graph& g, const std::string&) { return split_tensors(g, op_table(), r, ranks); };
      auto m = load_model(golden_dir("qwen3_next"), opt);
      if (!m.ok()) return void(errors[size_t(r)] = m.error().message);
      Session s(**m, 16);
      auto out = s.step(prompt, names);
      if (!out.ok()) return void(errors[size_t(r)] = out.error().message);
      got[size_t(r)] = std::move(*out);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < ranks; ++r) {
    ASSERT_EQ(errors[size_t(r)], "") << "rank " << r;
    for (const auto& name : names) {
      const Tensor& a = want->at(name);
      ASSERT_TRUE(got[size_t(r)].count(name)) << name;
      const Tensor& b = got[size_t(r)].at(name);
      ASSERT_EQ(a.shape, b.shape) << name << " rank " << r;
      float scale = 0, worst = 0;
      for (int64_t i = 0; i < a.numel(); ++i) scale = std::max(scale, std::abs(a.f32()[i]));
      for (int64_t i = 0; i < a.numel(); ++i) worst = std::max(worst, std::abs(a.f32()[i] - b.f32()[i]));
      EXPECT_LE(worst, 1e-5f * scale + 1e-6f) << name << " rank " << r;
    }
  }
}

class SplitGolden : public ::testing::TestWithParam<std::string> {};

TEST_P(SplitGolden, TwoProcessesAsOne) { expect_split_matches(GetParam(), 2); }
TEST_P(SplitGolden, FourProcessesAsOne) { expect_split_matches(GetParam(), 4); }
TEST_P(SplitGolden, TwoStagesAsOne) { expect_split_matches(GetParam(), 2, true); }
TEST_P(SplitGolden, FourStagesAsOne) { expect_split_matches(GetParam(), 4, true); }

INSTANTIATE_TEST_SUITE_P(Decoders, SplitGolden,
                         ::testing::Values("llama", "qwen3", "gemma3_text", "mixtral", "qwen2_moe", "deepseek_v3",
                                           "deepseek_v2_lite", "phi3", "starcoder2", "gpt2", "gemma2", "qwen3_next"));

// Quantized weights are cut on whole blocks: qwen3's FFN of 160 columns in
// Q8_0 (five blocks of 32) over 2 processes as 64 and 96.
TEST(TensorSplit, QuantizedRowsCutOnWholeBlocks) {
  ARCH_REQUIRE_SHARED(golden_dir("qwen3"));
  const std::string out = ::testing::TempDir() + "/qwen3_q8_split.safetensors";
  auto imported = import_checkpoint(golden_dir("qwen3"), out, ImportType::Q8);
  ASSERT_TRUE(imported.ok()) << imported.error().message;
  auto ckpt = load_checkpoint(out);
  ASSERT_TRUE(ckpt.ok()) << ckpt.error().message;
  EXPECT_EQ(block_granule(*ckpt), 32);
  auto whole = load_model(out);
  ASSERT_TRUE(whole.ok()) << whole.error().message;
  for (int rank = 0; rank < 2; ++rank) {
    auto s = split_tensors((*whole)->graph(), op_table(), rank, 2, nullptr, 32);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(part_of(*s, "model.layers.0.mlp.down_proj.weight"), rank ? Part::of(1, 64, 160) : Part::of(1, 0, 64));
    LoadOptions opt;
    opt.rewrite = [&](const Graph& g, const std::string&) { return split_tensors(g, op_table(), rank, 2, nullptr, 32); };
    auto part = load_model(out, opt);  // binds: every cut on a block's edge
    EXPECT_TRUE(part.ok()) << part.error().message;
  }
  std::remove(out.c_str());
}

// A hybrid of recurrent and attention layers, by layers over 3 stages too
// (4 layers: 2, 1 and 1).
class PipelineGolden : public ::testing::TestWithParam<std::string> {};
TEST_P(PipelineGolden, TwoStagesAsOne) { expect_split_matches(GetParam(), 2, true); }
TEST_P(PipelineGolden, ThreeStagesAsOne) { expect_split_matches(GetParam(), 3, true); }
INSTANTIATE_TEST_SUITE_P(Decoders, PipelineGolden, ::testing::Values("qwen3_next"));

TEST(PipelineSplit, StagesHoldTheirLayersWeights) {
  ARCH_REQUIRE_SHARED(golden_dir("gemma3_text"));
  const Graph g = graph_of("gemma3_text");  // 3 layers, tied embeddings
  PipelineSplitReport a, b;
  auto s0 = split_pipeline(g, op_table(), 0, 2, &a), s1 = split_pipeline(g, op_table(), 1, 2, &b);
  ASSERT_TRUE(s0.ok() && s1.ok());
  EXPECT_EQ(a.layers, 3);
  EXPECT_EQ(a.first, 0);
  EXPECT_EQ(a.last, 1);
  EXPECT_EQ(b.first, 1);
  EXPECT_EQ(b.last, 3);
  auto binds = [](const Graph& s, const std::string& name) {
    for (const auto& w : s.weights)
      if (w.tensor == name) return true;
    return false;
  };
  EXPECT_TRUE(binds(*s0, "model.layers.0.mlp.down_proj.weight"));
  EXPECT_FALSE(binds(*s0, "model.layers.1.mlp.down_proj.weight"));
  EXPECT_TRUE(binds(*s1, "model.layers.2.mlp.down_proj.weight"));
  EXPECT_FALSE(binds(*s1, "model.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(binds(*s0, "model.embed_tokens.weight"));  // the embedding and the tied head: rank 0's
  EXPECT_FALSE(binds(*s1, "model.embed_tokens.weight"));
  // The hidden state out to rank 1 and back.
  EXPECT_EQ(a.sent, 1);
  EXPECT_EQ(a.received, 1);
  EXPECT_EQ(b.sent, 1);
  EXPECT_EQ(b.received, 1);
}

}  // namespace
}  // namespace arch

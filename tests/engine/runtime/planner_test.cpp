// The planner's rewrites on the toy model: what it merges, folds and
// fuses, and that the rewritten program computes what the template's graph
// does.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "engine/runtime/model.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/engine/runtime/toy_model.h"
#include "tests/shared_data.h"
#include "kernels/kernels.h"

namespace arch {
namespace {

int count(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op == op;
  return n;
}

Tensor logits(const Program& p) {
  RunState state;
  state.max_context = 4;
  state.ops = &op_table();
  Tensor tokens = Tensor::zeros(DType::I32, {4}), positions = Tensor::zeros(DType::I32, {4});
  for (int i = 0; i < 4; ++i) tokens.i32()[i] = 3 + 7 * i, positions.i32()[i] = i;
  const Graph& g = *p.graph;
  int out = -1;
  for (const GraphOutput& o : g.outputs)
    if (o.name == "logits") out = o.value;
  auto r = run_program(p, state, {{g.find_input("tokens"), tokens}, {g.find_input("positions"), positions}}, 4, 4,
                       {out});
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? r->at(out) : Tensor{};
}

// Within the goldens' float32 rule: 1e-4 of the largest |logit|, plus 1e-5.
void expect_close(const Tensor& want, const Tensor& got) {
  ASSERT_EQ(want.numel(), got.numel());
  double worst = 0, top = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    worst = std::max(worst, double(std::abs(want.f32()[i] - got.f32()[i])));
    top = std::max(top, double(std::abs(want.f32()[i])));
  }
  EXPECT_LE(worst, 1e-4 * top + 1e-5);
}

TEST(Planner, FoldsAddsAndFusesGatedActivations) {
  auto m = testing::load_toy(5, "reference");
  ASSERT_TRUE(m);
  const Graph& g = m->graph();
  auto planned = make_program(g, op_table(), m->program().weights, "cpu", true);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  const Graph& p = *planned->graph;
  // Two layers, each adding the attention output and the MLP output to the
  // residual stream: 4 adds become the o_proj and down_proj matmuls' third
  // input.
  EXPECT_EQ(planned->plan.folded_adds, 4);
  EXPECT_EQ(count(p, "add"), count(g, "add") - 4);
  int with_addend = 0;
  for (const Node& n : p.nodes) with_addend += n.op == "matmul" && n.inputs.size() == 3 && n.inputs[2] >= 0;
  EXPECT_EQ(with_addend, 4);
  // Each layer's silu(gate) * up is one glu reading the merged gate/up
  // projection's halves in place: no silu or mul left, and the only slices
  // are q, k and v's.
  EXPECT_EQ(planned->plan.fused_glus, 2);
  EXPECT_EQ(count(p, "glu"), 2);
  EXPECT_EQ(count(p, "silu"), 0);
  EXPECT_EQ(count(p, "mul"), count(g, "mul") - 2);
  EXPECT_EQ(count(p, "slice"), 2 * 3);
  for (const Node& n : p.nodes)
    if (n.op == "glu") {
      EXPECT_EQ(n.inputs[0], n.inputs[1]);  // both halves of one value
      EXPECT_EQ(n.attrs["gate_start"], 0);
      EXPECT_EQ(n.attrs["up_start"], n.attrs["width"]);
    }
  // The same logits as the template's graph on the reference kernels.
  Tensor want = logits(m->program()), got = logits(*planned);
  expect_close(want, got);
}

// Qwen's q, k and v biases stored as BF16, as a bf16 checkpoint holds
// them: they fold into the merged projection, widened exactly, as F32 ones
// do (before, they stayed three adds a layer).
TEST(Planner, FoldsBf16BiasesOfAMergedProjection) {
  namespace fs = std::filesystem;
  LlamaShape shape;
  shape.model_type = "qwen2";
  shape.qkv_bias = true;
  shape.bf16 = true;
  const fs::path dir = fs::temp_directory_path() / ("planner_bf16_bias_" + std::to_string(getpid()));
  ASSERT_TRUE(write_random_checkpoint(dir.string(), shape, 3).ok());
  LoadOptions lo;
  lo.backend = "reference";
  auto reference = load_model(dir.string(), lo);
  lo.backend = "cpu";  // planned on the weights as stored
  auto cpu = load_model(dir.string(), lo);
  fs::remove_all(dir);
  ASSERT_TRUE(reference.ok()) << reference.error().message;
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  const Program& planned = (*cpu)->program();
  // Per layer: q, k and v's biases and the two residual adds.
  EXPECT_EQ(planned.plan.folded_adds, 2 * 5);
  EXPECT_EQ(count(*planned.graph, "add"), count((*reference)->graph(), "add") - 2 * 5);
  Tensor want = logits((*reference)->program()), got = logits(planned);
  expect_close(want, got);
}

}  // namespace
}  // namespace arch

namespace arch {
namespace {

TEST(Planner, FoldsAnActivationIntoTheMatmulBeforeIt) {
  // Whisper's fc1: gelu(x @ W^T + b) becomes one matmul with the bias and
  // activation "gelu"; the stem's gelus after conv1d stay ops of their own.
  std::string dir = testing::golden_dir("whisper");
  ARCH_REQUIRE_SHARED(dir);
  LoadOptions lo;
  lo.backend = "reference";
  auto m = load_model(dir, lo);
  ASSERT_TRUE(m.ok()) << m.error().message;
  auto encode = (*m)->find_graph("encode");
  ASSERT_TRUE(encode.ok());
  const Graph& g = (*encode)->graph;
  EXPECT_EQ(count(g, "gelu"), 4);  // 2 stem + 2 layers, as the template wrote them
  auto planned = make_program(g, op_table(), (*encode)->program.weights, "cpu", true);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  EXPECT_EQ(planned->plan.fused_activations, 2);
  EXPECT_EQ(count(*planned->graph, "gelu"), 2);
  int with_gelu = 0;
  for (const Node& n : planned->graph->nodes)
    if (n.op == "matmul" && n.attrs.value("activation", "") == "gelu") {
      ++with_gelu;
      EXPECT_EQ(n.inputs.size(), 3u);  // the bias folded too
    }
  EXPECT_EQ(with_gelu, 2);
}

TEST(Planner, MergesSiblingProjectionsOnlyWhereRowsAreNotKnownToBeMany) {
  // whisper-base's encoder takes 1500 rows: q, k and v stay three products
  // (each at the GEMM rate, no slices to copy); its decoder's steps take
  // `seq` rows, so they merge.
  namespace fs = std::filesystem;
  std::string dir = (fs::temp_directory_path() / ("planner_wb_" + std::to_string(getpid()))).string();
  ASSERT_TRUE(write_toy_from_spec(std::string(ARCHETYPE_FAMILIES_DIR) + "/toys/whisper-base.json", dir, 1).ok());
  LoadOptions lo;
  lo.backend = "reference";
  auto m = load_model(dir, lo);
  fs::remove_all(dir);
  ASSERT_TRUE(m.ok()) << m.error().message;
  for (const char* name : {"encode", "decode"}) {
    auto mg = (*m)->find_graph(name);
    ASSERT_TRUE(mg.ok());
    auto planned = make_program((*mg)->graph, op_table(), (*mg)->program.weights, "cpu", true);
    ASSERT_TRUE(planned.ok()) << planned.error().message;
    if (std::string(name) == "encode") {
      EXPECT_EQ(planned->plan.merged_nodes, 0);
      EXPECT_EQ(count(*planned->graph, "slice"), 0);
    } else {
      EXPECT_GT(planned->plan.merged_nodes, 0);
    }
  }
}

TEST(Planner, FoldsALeakyReluIntoTheConvBeforeIt) {
  // HiFi-GAN's resblocks: conv, leaky_relu, conv. The leaky_relu after the
  // first conv of each pair folds (2 stages x 2 kernels x 3 dilations);
  // the one before it reads the residual too, and stays.
  std::string dir = testing::golden_dir("vits");
  ARCH_REQUIRE_SHARED(dir);
  LoadOptions lo;
  lo.backend = "reference";
  auto m = load_model(dir, lo);
  ASSERT_TRUE(m.ok()) << m.error().message;
  const Graph& g = (*m)->graph();
  auto planned = make_program(g, op_table(), (*m)->program().weights, "cpu", true);
  ASSERT_TRUE(planned.ok()) << planned.error().message;
  int folded = 0;
  for (const Node& n : planned->graph->nodes)
    if (n.op == "conv1d" && n.attrs.value("activation", "") == "leaky_relu") {
      ++folded;
      EXPECT_DOUBLE_EQ(n.attrs.value("activation_slope", 0.0), 0.1);
    }
  EXPECT_EQ(folded, 12);
  EXPECT_EQ(planned->plan.fused_activations, 12);
  EXPECT_EQ(count(*planned->graph, "leaky_relu"), count(g, "leaky_relu") - 12);
}

}  // namespace
}  // namespace arch

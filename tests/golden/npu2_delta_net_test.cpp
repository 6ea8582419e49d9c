// Gated-DeltaNet blocks on the NPU2 (issue 53): the Qwen3-Next family's
// linear-attention layers lower into the merged projections' matvec, the
// convolution with its SiLU, the l2 norms, the gates, the delta rule's step
// and the gated norm, its full-attention layers' query with its output gate
// into the merged q/k/v matvec and an output gate; the emulated program
// draws exactly the host reference's tokens under the NPU2 numerics, the
// prompt in one call and in chunks, on toys of the family's other shapes
// (written from a spec here: no golden holds them) and on the golden.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/golden/npu2_golden.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::expect_emulated_tokens_equal_host;
using testing::graph_only;

// A dense Qwen3-Next (no experts) of the given shape.
struct Shape {
  std::vector<std::string> layer_types;
  int64_t key_heads, value_heads, key_dim, value_dim, conv_kernel;
  int64_t heads, kv_heads, head_dim;
};

std::string write_toy(const testing::TempDir& dir, const Shape& s) {
  const int64_t D = 48, I = 96, V = 256, L = int64_t(s.layer_types.size());
  const int64_t kw = s.key_heads * s.key_dim, vw = s.value_heads * s.value_dim;
  nlohmann::json config = {{"architectures", {"Qwen3NextForCausalLM"}},
                           {"model_type", "qwen3_next"},
                           {"vocab_size", V},
                           {"hidden_size", D},
                           {"intermediate_size", I},
                           {"num_hidden_layers", L},
                           {"num_attention_heads", s.heads},
                           {"num_key_value_heads", s.kv_heads},
                           {"head_dim", s.head_dim},
                           {"linear_conv_kernel_dim", s.conv_kernel},
                           {"linear_key_head_dim", s.key_dim},
                           {"linear_num_key_heads", s.key_heads},
                           {"linear_num_value_heads", s.value_heads},
                           {"linear_value_head_dim", s.value_dim},
                           {"num_experts", 0},
                           {"mlp_only_layers", nlohmann::json::array()},
                           {"hidden_act", "silu"},
                           {"max_position_embeddings", 256},
                           {"partial_rotary_factor", 0.5},
                           {"rope_theta", 10000.0},
                           {"rms_norm_eps", 1e-6},
                           {"tie_word_embeddings", false},
                           {"attention_bias", false},
                           {"layer_types", s.layer_types}};
  for (int64_t i = 0; i < L; ++i) config["mlp_only_layers"].push_back(i);
  nlohmann::json t = nlohmann::json::array();
  auto add = [&](const std::string& name, std::vector<int64_t> dims) { t.push_back({name, dims}); };
  add("model.embed_tokens.weight", {V, D});
  add("model.norm.weight", {D});
  add("lm_head.weight", {V, D});
  for (int64_t i = 0; i < L; ++i) {
    const std::string l = "model.layers." + std::to_string(i) + ".";
    add(l + "input_layernorm.weight", {D});
    add(l + "post_attention_layernorm.weight", {D});
    add(l + "mlp.gate_proj.weight", {I, D});
    add(l + "mlp.up_proj.weight", {I, D});
    add(l + "mlp.down_proj.weight", {D, I});
    if (s.layer_types[size_t(i)] == "linear_attention") {
      add(l + "linear_attn.in_proj_qkvz.weight", {2 * kw + 2 * vw, D});
      add(l + "linear_attn.in_proj_ba.weight", {2 * s.value_heads, D});
      add(l + "linear_attn.conv1d.weight", {2 * kw + vw, 1, s.conv_kernel});
      add(l + "linear_attn.dt_bias", {s.value_heads});
      add(l + "linear_attn.A_log", {s.value_heads});
      add(l + "linear_attn.norm.weight", {s.value_dim});
      add(l + "linear_attn.out_proj.weight", {D, vw});
    } else {
      add(l + "self_attn.q_proj.weight", {2 * s.heads * s.head_dim, D});
      add(l + "self_attn.k_proj.weight", {s.kv_heads * s.head_dim, D});
      add(l + "self_attn.v_proj.weight", {s.kv_heads * s.head_dim, D});
      add(l + "self_attn.o_proj.weight", {D, s.heads * s.head_dim});
      add(l + "self_attn.q_norm.weight", {s.head_dim});
      add(l + "self_attn.k_norm.weight", {s.head_dim});
    }
  }
  const std::string spec = dir / "spec.json";
  testing::write_file(spec, nlohmann::json({{"about", "a dense Qwen3-Next toy"}, {"config", config}, {"tensors", t}}).dump());
  const std::string out = dir / "model";
  const Status st = write_toy_from_spec(spec, out, 11);
  EXPECT_TRUE(st.ok()) << st.error().message;
  return out;
}

const std::vector<int32_t> kPrompt = {5, 17, 99, 3, 200, 41, 7, 8, 9, 10, 11};

TEST(Npu2DeltaNet, AHybridToysTokensEqualTheHostReference) {
  // Three value heads over one key head, a 3-tap convolution, a gated
  // full-attention layer between two DeltaNet layers.
  testing::TempDir dir;
  const std::string m = write_toy(dir, {{"linear_attention", "full_attention", "linear_attention"}, 1, 3, 8, 8, 3, 2, 1, 16});
  expect_emulated_tokens_equal_host(m, kPrompt, 20);
}

TEST(Npu2DeltaNet, AnotherShapesTokensEqualTheHostReference) {
  // Two key heads of 16 for two value heads of 8, a 4-tap convolution,
  // the attention layer first.
  testing::TempDir dir;
  const std::string m = write_toy(dir, {{"full_attention", "linear_attention", "linear_attention"}, 2, 2, 16, 8, 4, 4, 2, 8});
  expect_emulated_tokens_equal_host(m, kPrompt, 20);
}

// The units a DeltaNet layer lowers to, each with its state where it keeps
// one: the convolution's last inputs and the delta rule's matrices, sized by
// the block's shape (not the context).
TEST(Npu2DeltaNet, ALayersUnitsAndStates) {
  testing::TempDir dir;
  const std::string m = write_toy(dir, {{"linear_attention", "full_attention", "linear_attention"}, 1, 3, 8, 8, 3, 2, 1, 16});
  auto model = graph_only(m);
  ASSERT_TRUE(model);
  auto l = lower_model(*model, Npu2Options{64, 4, ""});
  ASSERT_TRUE(l.ok() && l->refusals.empty()) << (l.ok() ? refusal_message(m, *l) : l.error().message);
  std::vector<std::string> kinds;
  for (const auto& u : l->program.units)
    if (u.block == "layers.0.delta_net") kinds.push_back(u.kind);
  EXPECT_EQ(kinds, (std::vector<std::string>{"rms_norm", "matvec", "conv", "head_norm", "head_norm", "gates", "delta_rule",
                                             "gated_norm", "matvec", "add"}));
  ASSERT_EQ(l->program.states.size(), 4u);
  EXPECT_EQ(l->program.states[0].kind, "conv");
  EXPECT_EQ(l->program.states[0].shape, (Dims{2, 8 + 8 + 24}));  // kernel - 1 inputs of q | k | v
  EXPECT_EQ(l->program.states[1].kind, "recurrent");
  EXPECT_EQ(l->program.states[1].shape, (Dims{3, 8, 8}));
  EXPECT_EQ(l->program.states[1].dtype, "f32");
  EXPECT_EQ(l->program.caches.size(), 1u);  // the attention layer's alone
  // The merged projection's rows: q, k, v of every key head side by side
  // (in_proj_qkvz groups them per key head), then z, b, a.
  for (const auto& u : l->program.units)
    if (u.block == "layers.0.delta_net" && u.kind == "matvec" && u.attrs.value("role", "") == "qkvz") {
      ASSERT_EQ(u.writes.size(), 6u);
      EXPECT_EQ(u.constants[0].shape, (Dims{8 + 8 + 24 + 24 + 3 + 3, 48}));
      EXPECT_EQ(u.constants[0].parts.front().tensor, "model.layers.0.linear_attn.in_proj_qkvz.weight");
      EXPECT_EQ(u.constants[0].parts.back().tensor, "model.layers.0.linear_attn.in_proj_ba.weight");
    }
  // The gated attention layer: q and its gate from one matrix, the gate a unit after the attention.
  bool gate = false;
  for (const auto& u : l->program.units) gate = gate || (u.block == "layers.1.attention" && u.kind == "output_gate");
  EXPECT_TRUE(gate);
}

}  // namespace
}  // namespace arch

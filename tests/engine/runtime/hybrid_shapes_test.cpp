// qwen3_next.arch on shapes the golden does not have (random weights from a
// toy spec): as many key as value heads, key and value head dims that
// differ, other convolution widths, a dense MLP, attention biases, the
// layer kinds from full_attention_interval alone. On each, every cpu kernel's step gives its
// reference kernel's output (--check: whole logits could part where random
// routers' near-ties pick other experts), and a prompt decoded on step by
// step gives what one call over the whole sequence gives.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using json = nlohmann::json;
using testing::TempDir;

struct Shape {
  const char* name;
  int64_t key_heads, value_heads, key_dim, value_dim, kernel, interval, experts;
  bool attention_bias = false;
};

void PrintTo(const Shape& s, std::ostream* os) { *os << s.name; }

// A spec of 4 layers whose kinds follow `interval` (no layer_types).
json spec_of(const Shape& s) {
  const int64_t H = 48, layers = 4, heads = 4, kv_heads = 2, head_dim = 8, vocab = 96;
  json config = {{"model_type", "qwen3_next"},        {"vocab_size", vocab},
                 {"hidden_size", H},                  {"intermediate_size", 40},
                 {"num_hidden_layers", layers},       {"num_attention_heads", heads},
                 {"num_key_value_heads", kv_heads},   {"head_dim", head_dim},
                 {"linear_conv_kernel_dim", s.kernel}, {"linear_key_head_dim", s.key_dim},
                 {"linear_value_head_dim", s.value_dim}, {"linear_num_key_heads", s.key_heads},
                 {"linear_num_value_heads", s.value_heads}, {"full_attention_interval", s.interval},
                 {"num_experts", s.experts},          {"num_experts_per_tok", 2},
                 {"moe_intermediate_size", 16},       {"shared_expert_intermediate_size", s.experts ? 24 : 0},
                 {"partial_rotary_factor", 0.5},      {"rope_theta", 10000.0},
                 {"rms_norm_eps", 1e-6},              {"max_position_embeddings", 256},
                 {"attention_bias", s.attention_bias}};
  const int64_t key_width = s.key_heads * s.key_dim, value_width = s.value_heads * s.value_dim;
  json t = json::array({json::array({"model.embed_tokens.weight", {vocab, H}}), json::array({"lm_head.weight", {vocab, H}}),
                        json::array({"model.norm.weight", {H}})});
  for (int64_t i = 0; i < layers; ++i) {
    const std::string L = "model.layers." + std::to_string(i) + ".";
    t.push_back({L + "input_layernorm.weight", {H}});
    t.push_back({L + "post_attention_layernorm.weight", {H}});
    if ((i + 1) % s.interval != 0) {
      const std::string A = L + "linear_attn.";
      t.push_back({A + "in_proj_qkvz.weight", {2 * key_width + 2 * value_width, H}});
      t.push_back({A + "in_proj_ba.weight", {2 * s.value_heads, H}});
      t.push_back({A + "conv1d.weight", {2 * key_width + value_width, 1, s.kernel}});
      t.push_back({A + "dt_bias", {s.value_heads}});
      t.push_back({A + "A_log", {s.value_heads}});
      t.push_back({A + "norm.weight", {s.value_dim}});
      t.push_back({A + "out_proj.weight", {H, value_width}});
    } else {
      const std::string A = L + "self_attn.";
      t.push_back({A + "q_proj.weight", {2 * heads * head_dim, H}});
      t.push_back({A + "k_proj.weight", {kv_heads * head_dim, H}});
      t.push_back({A + "v_proj.weight", {kv_heads * head_dim, H}});
      t.push_back({A + "o_proj.weight", {H, heads * head_dim}});
      t.push_back({A + "q_norm.weight", {head_dim}});
      t.push_back({A + "k_norm.weight", {head_dim}});
      if (s.attention_bias) {
        t.push_back({A + "q_proj.bias", {2 * heads * head_dim}});
        t.push_back({A + "k_proj.bias", {kv_heads * head_dim}});
        t.push_back({A + "v_proj.bias", {kv_heads * head_dim}});
        t.push_back({A + "o_proj.bias", {H}});
      }
    }
    const std::string M = L + "mlp.";
    if (s.experts == 0) {
      t.push_back({M + "gate_proj.weight", {40, H}});
      t.push_back({M + "up_proj.weight", {40, H}});
      t.push_back({M + "down_proj.weight", {H, 40}});
      continue;
    }
    t.push_back({M + "gate.weight", {s.experts, H}});
    for (const char* p : {"gate_proj", "up_proj"}) t.push_back({M + "experts.{e<" + std::to_string(s.experts) + "}." + p + ".weight", {16, H}});
    t.push_back({M + "experts.{e<" + std::to_string(s.experts) + "}.down_proj.weight", {H, 16}});
    for (const char* p : {"gate_proj", "up_proj"}) t.push_back({M + "shared_expert." + p + ".weight", {24, H}});
    t.push_back({M + "shared_expert.down_proj.weight", {H, 24}});
    t.push_back({M + "shared_expert_gate.weight", {1, H}});
  }
  return {{"config", config}, {"tensors", t}};
}

class HybridShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(HybridShapes, FastEqualsReferenceAndDecodeEqualsRecompute) {
  TempDir specs, dir;
  std::ofstream(specs / "spec.json") << spec_of(GetParam()).dump();
  ASSERT_TRUE(write_toy_from_spec(specs / "spec.json", dir.path(), 7).ok());
  std::vector<int32_t> ids;
  for (int k = 0; k < 150; ++k) ids.push_back(int32_t((k * 37 + 11) % 96));  // 150: two chunks and a part
  for (const char* backend : {"reference", "cpu"}) {
    LoadOptions lo;
    lo.backend = backend;
    auto m = load_model(dir.path(), lo);
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ((*m)->family, "Qwen3NextStyle");
    EXPECT_TRUE((*m)->unused_tensors.empty()) << (*m)->unused_tensors.size() << " tensors read by no graph, the first "
                                               << (*m)->unused_tensors.front();
    Session once(**m, 160);
    CheckStats stats;
    if (std::string(backend) == "cpu") once.check_with(&stats);
    auto all = once.step(ids, {"logits"});
    ASSERT_TRUE(all.ok()) << all.error().message;
    if (std::string(backend) == "cpu") {
      EXPECT_GT(stats.checked, 0);
    }
    const Tensor& l = all->at("logits");
    // 130 at once, then one at a time.
    Session s(**m, 160);
    auto prompt = s.step(std::span<const int32_t>(ids.data(), 130), {"logits"}, true);
    ASSERT_TRUE(prompt.ok()) << prompt.error().message;
    const int64_t vocab = l.dim(1);
    double worst = 0, scale = 0;
    for (size_t k = 130; k < ids.size(); ++k) {
      auto step = s.step(std::span<const int32_t>(ids.data() + k, 1), {"logits"});
      ASSERT_TRUE(step.ok()) << step.error().message;
      for (int64_t v = 0; v < vocab; ++v) {
        const float want = l.f32()[int64_t(k) * vocab + v];
        worst = std::max(worst, double(std::abs(step->at("logits").f32()[v] - want)));
        scale = std::max(scale, double(std::abs(want)));
      }
    }
    EXPECT_LE(worst, 1e-4 * scale + 1e-5) << backend << ": decoding on differs from one call by " << worst;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Qwen3Next, HybridShapes,
    ::testing::Values(Shape{"as_many_key_as_value_heads", 3, 3, 8, 8, 4, 4, 4},
                      Shape{"key_and_value_dims_differ", 2, 6, 12, 20, 4, 4, 6},
                      Shape{"convolution_of_2_dense_mlp_every_other_layer", 2, 4, 8, 8, 2, 2, 0},
                      Shape{"convolution_of_6", 1, 2, 16, 8, 6, 3, 4},
                      Shape{"attention_biases", 2, 4, 8, 8, 4, 2, 4, true}),
    [](const ::testing::TestParamInfo<Shape>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace arch

// The IR text of families/llama.arch instantiated on the built-in toy
// checkpoint (importer/checkpoint/toy_checkpoint.h): the golden of what a template
// change does to the graph, as `archc dump` prints it.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "dsl/instantiate.h"
#include "dsl/parse.h"
#include "engine/core/graph.h"
#include "importer/checkpoint/checkpoint.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "kernels/kernels.h"
#include "tests/dsl/dsl_test_util.h"

namespace arch::dsl {
namespace {

namespace fs = std::filesystem;

class ToyDump : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string((fs::temp_directory_path() /
                            ("arch_dsl_dump_test_" + std::to_string(::getpid()))).string());
    ASSERT_TRUE(write_toy_checkpoint(*dir_).ok());
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
    delete dir_;
  }

  static std::string dump() {
    auto ckpt = load_checkpoint(*dir_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.error().message;
    if (!ckpt.ok()) return "";
    auto t = parse_template_file(ARCHETYPE_SOURCE_DIR "/families/llama.arch");
    EXPECT_TRUE(t.ok()) << t.error().message;
    if (!t.ok()) return "";
    InstantiateOptions opt;
    opt.config = ckpt->config;
    opt.tensor_exists = [&](const std::string& n) { return ckpt->has(n); };
    auto in = instantiate(*t, opt, op_table());
    EXPECT_TRUE(in.ok()) << in.error().message;
    return in.ok() ? print_graph(in->graph) : "";
  }

  static std::string* dir_;
};

std::string* ToyDump::dir_ = nullptr;

TEST_F(ToyDump, Header) {
  std::string text = dump();
  EXPECT_EQ(text.rfind("graph step  # family LlamaStyle\n"
                       "input tokens: i32[seq]\n"
                       "input positions: i32[seq]\n"
                       "weight model.embed_tokens.weight: f32[256, 64]\n"
                       "weight model.layers.0.input_layernorm.weight: f32[64]\n"
                       "weight model.layers.0.self_attn.q_proj.weight: f32[64, 64]\n"
                       "weight model.layers.0.self_attn.k_proj.weight: f32[32, 64]\n",
                       0),
            0u)
      << text;
}

TEST_F(ToyDump, LayerZeroAttention) {
  std::string text = dump();
  // Contiguous, in execution order: 4 query heads and 2 KV heads of 16, no
  // biases, no q/k norms, full causal attention over the KV cache; values
  // made in a block are named scope.block.name.
  const char* attention =
      "h = embed(model.embed_tokens.weight, tokens) : f32[seq, 64]\n"
      "layers.0.norm = rms_norm(h, model.layers.0.input_layernorm.weight) {\"eps\":1e-05} : f32[seq, 64]\n"
      "layers.0.qkv.q = matmul(layers.0.norm, model.layers.0.self_attn.q_proj.weight, _) {\"transpose_b\":true} : f32[seq, 64]\n"
      "layers.0.qkv.k = matmul(layers.0.norm, model.layers.0.self_attn.k_proj.weight, _) {\"transpose_b\":true} : f32[seq, 32]\n"
      "layers.0.qkv.v = matmul(layers.0.norm, model.layers.0.self_attn.v_proj.weight, _) {\"transpose_b\":true} : f32[seq, 32]\n"
      "layers.0.self_attention.q = reshape(layers.0.qkv.q) {\"shape\":[-1,4,16]} : f32[seq, 4, 16]\n"
      "layers.0.self_attention.k = reshape(layers.0.qkv.k) {\"shape\":[-1,2,16]} : f32[seq, 2, 16]\n"
      "layers.0.self_attention.v = reshape(layers.0.qkv.v) {\"shape\":[-1,2,16]} : f32[seq, 2, 16]\n"
      "layers.0.self_attention.q#2 = rope(layers.0.self_attention.q, positions) {\"interleaved\":false,\"max_position_embeddings\":256,\"original_max_position_embeddings\":0,\"rope_dim\":16,\"scaling\":null,\"theta\":10000.0} : f32[seq, 4, 16]\n"
      "layers.0.self_attention.k#2 = rope(layers.0.self_attention.k, positions) {\"interleaved\":false,\"max_position_embeddings\":256,\"original_max_position_embeddings\":0,\"rope_dim\":16,\"scaling\":null,\"theta\":10000.0} : f32[seq, 2, 16]\n"
      "layers.0.self_attention.full_k, layers.0.self_attention.full_v = kv_cache(layers.0.self_attention.k#2, layers.0.self_attention.v) : f32[ctx, 2, 16], f32[ctx, 2, 16]\n"
      "layers.0.self_attention.attn = attention(layers.0.self_attention.q#2, layers.0.self_attention.full_k, layers.0.self_attention.full_v, _, _) {\"causal\":true,\"scale\":0.25,\"softcap\":0.0,\"value_dim\":0,\"window\":0} : f32[seq, 4, 16]\n"
      "layers.0.self_attention.attn#2 = reshape(layers.0.self_attention.attn) {\"shape\":[-1,64]} : f32[seq, 64]\n"
      "layers.0.attention_output.out = matmul(layers.0.self_attention.attn#2, model.layers.0.self_attn.o_proj.weight, _) {\"transpose_b\":true} : f32[seq, 64]\n"
      "layers.0.decoder_layer.h = add(h, layers.0.attention_output.out) : f32[seq, 64]\n";
  EXPECT_NE(text.find(attention), std::string::npos) << text;
}

TEST_F(ToyDump, LayerZeroMlpThroughTheActivationBlock) {
  std::string text = dump();
  EXPECT_NE(text.find(
          "layers.0.swiglu.gate = matmul(layers.0.norm#2, model.layers.0.mlp.gate_proj.weight, _) {\"transpose_b\":true} : f32[seq, 128]\n"
          "layers.0.swiglu.up = matmul(layers.0.norm#2, model.layers.0.mlp.up_proj.weight, _) {\"transpose_b\":true} : f32[seq, 128]\n"
          "layers.0.activation = silu(layers.0.swiglu.gate) : f32[seq, 128]\n"
          "layers.0.swiglu.out.mul = mul(layers.0.activation, layers.0.swiglu.up) : f32[seq, 128]\n"
          "layers.0.swiglu.out = matmul(layers.0.swiglu.out.mul, model.layers.0.mlp.down_proj.weight, _) {\"transpose_b\":true} : f32[seq, 64]\n"
          "layers.0.h = add(layers.0.decoder_layer.h, layers.0.swiglu.out) : f32[seq, 64]\n"
          "layers.1.norm = rms_norm(layers.0.h, model.layers.1.input_layernorm.weight) {\"eps\":1e-05} : f32[seq, 64]\n"),
            std::string::npos)
      << text;
}

TEST_F(ToyDump, UntiedHeadAndOutputs) {
  std::string text = dump();
  EXPECT_NE(text.find("weight lm_head.weight: f32[256, 64]\n"), std::string::npos) << text;
  const char* tail =
      "h#2 = rms_norm(layers.1.h, model.norm.weight) {\"eps\":1e-05} : f32[seq, 64]\n"
      "logits = matmul(h#2, lm_head.weight, _) {\"transpose_b\":true} : f32[seq, 256]\n"
      "output embeddings = h\n"
      "output layer_outputs[0] = layers.0.h\n"
      "output layer_outputs[1] = layers.1.h\n"
      "output last_hidden_state = h#2\n"
      "output logits = logits\n";
  ASSERT_GE(text.size(), std::string(tail).size());
  EXPECT_EQ(text.substr(text.size() - std::string(tail).size()), tail) << text;
  EXPECT_EQ(testing::lines_of(text).size(), 74u);
}

TEST_F(ToyDump, StableAcrossInstantiations) {
  EXPECT_EQ(dump(), dump());
}

}  // namespace
}  // namespace arch::dsl

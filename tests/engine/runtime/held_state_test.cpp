// A template with two graphs and a `state` input: an encoder's output held
// by the session, and what is computed from it alone (cross-attention K/V)
// computed once per session, not once per call. Written over the toy
// checkpoint's tensors (a Llama's names), so nothing else is needed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "importer/checkpoint/toy_checkpoint.h"
#include "engine/runtime/model.h"
#include "engine/runtime/session.h"

namespace arch {
namespace {

namespace fs = std::filesystem;

// encode: the tokens embedded, one SwiGLU MLP, normed. decode: a causal
// self-attention over a KV cache, then cross-attention whose keys and
// values are the held encoder states projected (src of them), then the head.
const char* kEncoderDecoder = R"(family HeldStateTest

config {
  vocab_size: int
  hidden_size: int
  num_attention_heads: int
  num_key_value_heads: int
  head_dim: int = hidden_size / num_attention_heads
  rms_norm_eps: float = 1e-6
}

weights {
  model.embed_tokens.weight: [vocab_size, hidden_size]
  model.norm.weight: [hidden_size]
  lm_head.weight: [vocab_size, hidden_size]
  model.layers.{i}.input_layernorm.weight: [hidden_size]
  model.layers.{i}.self_attn.q_proj.weight: [num_attention_heads * head_dim, hidden_size]
  model.layers.{i}.self_attn.k_proj.weight: [num_key_value_heads * head_dim, hidden_size]
  model.layers.{i}.self_attn.v_proj.weight: [num_key_value_heads * head_dim, hidden_size]
  model.layers.{i}.self_attn.o_proj.weight: [hidden_size, num_attention_heads * head_dim]
  model.layers.{i}.mlp.gate_proj.weight: [128, hidden_size]
  model.layers.{i}.mlp.up_proj.weight: [128, hidden_size]
  model.layers.{i}.mlp.down_proj.weight: [hidden_size, 128]
}

graph encode(input_ids: i32[src]) {
  h = embed(model.embed_tokens.weight, input_ids)                       # [src, hidden]
  M = model.layers.0.mlp
  h = h + (silu(h @ M.gate_proj.weight^T) * (h @ M.up_proj.weight^T)) @ M.down_proj.weight^T
  output last_hidden_state = rms_norm(h, model.norm.weight, eps: rms_norm_eps)
}

graph decode(tokens: i32[seq], positions: i32[seq], state encoder_hidden_states: f32[src, hidden_size]) {
  A = model.layers.0.self_attn
  h = embed(model.embed_tokens.weight, tokens)
  x = rms_norm(h, model.layers.0.input_layernorm.weight, eps: rms_norm_eps)
  q = reshape(x @ A.q_proj.weight^T, shape: [seq, num_attention_heads, head_dim])
  k = reshape(x @ A.k_proj.weight^T, shape: [seq, num_key_value_heads, head_dim])
  v = reshape(x @ A.v_proj.weight^T, shape: [seq, num_key_value_heads, head_dim])
  q = rope(q, positions, theta: 10000.0)
  k = rope(k, positions, theta: 10000.0)
  full_k, full_v = kv_cache(k, v)
  a = attention(q, full_k, full_v, causal: true)
  h = h + reshape(a, shape: [seq, num_attention_heads * head_dim]) @ A.o_proj.weight^T
  C = model.layers.1.self_attn
  x = rms_norm(h, model.layers.1.input_layernorm.weight, eps: rms_norm_eps)
  cq = reshape(x @ C.q_proj.weight^T, shape: [seq, num_attention_heads, head_dim])
  ck = reshape(encoder_hidden_states @ C.k_proj.weight^T, shape: [src, num_key_value_heads, head_dim])
  cv = reshape(encoder_hidden_states @ C.v_proj.weight^T, shape: [src, num_key_value_heads, head_dim])
  c = attention(cq, ck, cv, causal: false)
  h = h + reshape(c, shape: [seq, num_attention_heads * head_dim]) @ C.o_proj.weight^T
  output logits = rms_norm(h, model.norm.weight, eps: rms_norm_eps) @ lm_head.weight^T
}
)";

struct Fixture {
  fs::path dir = fs::temp_directory_path() / ("held_state_" + std::to_string(getpid()));
  std::shared_ptr<Model> model;

  explicit Fixture(const std::string& backend) {
    fs::create_directories(dir);
    EXPECT_TRUE(write_toy_checkpoint(dir.string(), 2).ok());
    std::ofstream(dir / "encdec.arch") << kEncoderDecoder;
    LoadOptions lo;
    lo.backend = backend;
    lo.template_path = (dir / "encdec.arch").string();
    auto m = load_model(dir.string(), lo);
    EXPECT_TRUE(m.ok()) << m.error().message;
    if (m.ok()) model = *m;
  }
  ~Fixture() { fs::remove_all(dir); }
};

Tensor ids(std::vector<int32_t> v) {
  Tensor t = Tensor::zeros(DType::I32, {int64_t(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.i32()[i] = v[i];
  return t;
}

int64_t matmul_calls(const OpProfile& p) {
  auto it = p.by_op.find("matmul");
  return it == p.by_op.end() ? 0 : it->second.calls;
}

class HeldState : public ::testing::TestWithParam<const char*> {};

TEST_P(HeldState, TwoGraphsOneSessionCrossKvOnce) {
  Fixture f(GetParam());
  ASSERT_TRUE(f.model);
  const Model& m = *f.model;
  ASSERT_EQ(m.graph_names(), (std::vector<std::string>{"encode", "decode"}));
  auto decode = m.find_graph("decode");
  ASSERT_TRUE(decode.ok());
  EXPECT_TRUE((*decode)->has_kv_cache);
  EXPECT_FALSE(m.main().has_kv_cache);
  EXPECT_FALSE(m.find_graph("denoise").ok());

  Session s(m, 16);
  auto enc = s.run("encode", {{"input_ids", ids({5, 9, 33, 7, 100})}}, {"last_hidden_state"});
  ASSERT_TRUE(enc.ok()) << enc.error().message;
  const Tensor states = enc->at("last_hidden_state");
  ASSERT_EQ(states.shape, (Dims{5, 64}));
  EXPECT_EQ(s.position(), 0);  // no KV cache in encode: the position stays

  // Two prompt tokens with the states given, then decode steps without them.
  OpProfile first, later;
  s.profile_with(&first);
  auto a = s.run("decode", {{"tokens", ids({1, 2})}, {"encoder_hidden_states", states}});
  ASSERT_TRUE(a.ok()) << a.error().message;
  s.profile_with(&later);
  std::vector<Tensor> steps;
  for (int32_t t : {3, 4}) {
    auto b = s.run("decode", {{"tokens", ids({t})}});
    ASSERT_TRUE(b.ok()) << b.error().message;
    steps.push_back(b->at("logits"));
  }
  s.profile_with(nullptr);
  EXPECT_EQ(s.position(), 4);
  // The cross-attention's K and V projections ran on the first call only:
  // two matmuls, or one where the planner merged the two (cpu).
  const int64_t per_session = std::string(GetParam()) == "cpu" ? 1 : 2;
  EXPECT_EQ(matmul_calls(later), 2 * (matmul_calls(first) - per_session)) << "first " << matmul_calls(first);

  // The same logits as one pass with the states given every time.
  Session whole(m, 16);
  auto all = whole.run("decode", {{"tokens", ids({1, 2, 3, 4})}, {"encoder_hidden_states", states}});
  ASSERT_TRUE(all.ok()) << all.error().message;
  const Tensor& ref = all->at("logits");
  const int64_t vocab = ref.dim(-1);
  for (int k = 0; k < 2; ++k)
    for (int64_t v = 0; v < vocab; ++v)
      ASSERT_NEAR(steps[size_t(k)].f32()[v], ref.f32()[(2 + k) * vocab + v], 1e-4) << "step " << k;

  // New states (another source length) are taken, and the K/V made again.
  auto enc2 = s.run("encode", {{"input_ids", ids({8, 8, 8})}}, {"last_hidden_state"});
  ASSERT_TRUE(enc2.ok());
  s.profile_with(&later);
  later = {};
  ASSERT_TRUE(s.run("decode", {{"tokens", ids({5})}, {"encoder_hidden_states", enc2->at("last_hidden_state")}}).ok());
  EXPECT_EQ(matmul_calls(later), matmul_calls(first)) << "the K/V projections again";
  s.profile_with(nullptr);
}

TEST_P(HeldState, AHeldInputIsNeededOnce) {
  Fixture f(GetParam());
  ASSERT_TRUE(f.model);
  Session s(*f.model, 8);
  auto r = s.run("decode", {{"tokens", ids({1})}});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("'encoder_hidden_states' is missing"), std::string::npos) << r.error().message;
}

INSTANTIATE_TEST_SUITE_P(Paths, HeldState, ::testing::Values("reference", "cpu"));

}  // namespace
}  // namespace arch

// Each GGUF name map (families/gguf/*.toml) against a transformers golden:
// the golden's checkpoint written as llama.cpp's converter writes it (the
// names below are llama.cpp's, typed here from its gguf-py tables, not read
// from the maps; Q/K rows interleaved for llama, Gemma's norms stored as
// 1 + w, GPT-2's Conv1D matrices transposed, experts stacked per layer,
// DeepSeek's kv_b_proj split into k_b and v_b), read back through the map,
// must give transformers' logits within the golden tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <regex>

#include "engine/runtime/model.h"
#include "engine/runtime/session.h"
#include "importer/checkpoint/safetensors.h"
#include "tests/golden/golden_case.h"
#include "tests/gguf_writer.h"
#include "tests/test_files.h"

namespace arch {
namespace {

using testing::golden_dir;
using testing::read_json;

// Hugging Face name (regex, $1 the block) -> llama.cpp's name.
using Names = std::vector<std::pair<std::string, std::string>>;

const Names kDecoderNames = {
    {R"(model\.embed_tokens\.weight)", "token_embd.weight"},
    {R"(model\.norm\.weight)", "output_norm.weight"},
    {R"(lm_head\.weight)", "output.weight"},
    {R"(model\.layers\.(\d+)\.input_layernorm\.weight)", "blk.$1.attn_norm.weight"},
    {R"(model\.layers\.(\d+)\.post_attention_layernorm\.weight)", "blk.$1.ffn_norm.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.q_proj\.(weight|bias))", "blk.$1.attn_q.$2"},
    {R"(model\.layers\.(\d+)\.self_attn\.k_proj\.(weight|bias))", "blk.$1.attn_k.$2"},
    {R"(model\.layers\.(\d+)\.self_attn\.v_proj\.(weight|bias))", "blk.$1.attn_v.$2"},
    {R"(model\.layers\.(\d+)\.self_attn\.o_proj\.weight)", "blk.$1.attn_output.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.q_norm\.weight)", "blk.$1.attn_q_norm.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.k_norm\.weight)", "blk.$1.attn_k_norm.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.qkv_proj\.weight)", "blk.$1.attn_qkv.weight"},
    {R"(model\.layers\.(\d+)\.mlp\.gate_proj\.weight)", "blk.$1.ffn_gate.weight"},
    {R"(model\.layers\.(\d+)\.mlp\.up_proj\.weight)", "blk.$1.ffn_up.weight"},
    {R"(model\.layers\.(\d+)\.mlp\.gate_up_proj\.weight)", "blk.$1.ffn_up.weight"},
    {R"(model\.layers\.(\d+)\.mlp\.down_proj\.weight)", "blk.$1.ffn_down.weight"},
    {R"(model\.layers\.(\d+)\.mlp\.gate\.weight)", "blk.$1.ffn_gate_inp.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.kv_a_proj_with_mqa\.weight)", "blk.$1.attn_kv_a_mqa.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.kv_a_layernorm\.weight)", "blk.$1.attn_kv_a_norm.weight"},
    {R"(model\.layers\.(\d+)\.self_attn\.kv_b_proj\.weight)", "blk.$1.attn_kv_b.weight"},  // split below
    {R"(model\.layers\.(\d+)\.mlp\.shared_experts\.(gate|up|down)_proj\.weight)", "blk.$1.ffn_$2_shexp.weight"},
    {R"(model\.layers\.(\d+)\.block_sparse_moe\.gate\.weight)", "blk.$1.ffn_gate_inp.weight"},
    {R"(model\.layers\.(\d+)\.block_sparse_moe\.experts\.\d+\.w1\.weight)", "blk.$1.ffn_gate_exps.weight"},
    {R"(model\.layers\.(\d+)\.block_sparse_moe\.experts\.\d+\.w3\.weight)", "blk.$1.ffn_up_exps.weight"},
    {R"(model\.layers\.(\d+)\.block_sparse_moe\.experts\.\d+\.w2\.weight)", "blk.$1.ffn_down_exps.weight"},
    // each expert's matrix, stacked by the writer below into one per layer
    {R"(model\.layers\.(\d+)\.mlp\.experts\.\d+\.(gate|up|down)_proj\.weight)", "blk.$1.ffn_$2_exps.weight"},
};

const Names kGpt2Names = {
    {R"(transformer\.wte\.weight)", "token_embd.weight"},
    {R"(transformer\.wpe\.weight)", "position_embd.weight"},
    {R"(transformer\.ln_f\.(weight|bias))", "output_norm.$1"},
    {R"(transformer\.h\.(\d+)\.ln_1\.(weight|bias))", "blk.$1.attn_norm.$2"},
    {R"(transformer\.h\.(\d+)\.ln_2\.(weight|bias))", "blk.$1.ffn_norm.$2"},
    {R"(transformer\.h\.(\d+)\.attn\.c_attn\.(weight|bias))", "blk.$1.attn_qkv.$2"},
    {R"(transformer\.h\.(\d+)\.attn\.c_proj\.(weight|bias))", "blk.$1.attn_output.$2"},
    {R"(transformer\.h\.(\d+)\.mlp\.c_fc\.(weight|bias))", "blk.$1.ffn_up.$2"},
    {R"(transformer\.h\.(\d+)\.mlp\.c_proj\.(weight|bias))", "blk.$1.ffn_down.$2"},
};

struct Case {
  std::string golden, arch;
  const Names* names;
};

std::string gguf_name(const Names& names, const std::string& hf) {
  for (const auto& [pattern, to] : names) {
    std::smatch m;
    if (std::regex_match(hf, m, std::regex(pattern))) return m.format(to);
  }
  return "";
}

// The golden's config as llama.cpp's converter writes it (the keys every
// one of these converters writes; a field the config lacks is left out).
void write_config(testing::GgufWriter& w, const std::string& arch, const nlohmann::json& c) {
  auto first = [&](std::initializer_list<const char*> keys) -> const nlohmann::json* {
    for (const char* k : keys)
      if (c.contains(k) && !c[k].is_null()) return &c[k];
    return nullptr;
  };
  w.str("general.architecture", arch);
  auto u32 = [&](const std::string& key, std::initializer_list<const char*> fields) {
    if (auto* v = first(fields)) w.u32(arch + "." + key, v->get<uint32_t>());
  };
  auto f32 = [&](const std::string& key, std::initializer_list<const char*> fields) {
    if (auto* v = first(fields)) w.f32(arch + "." + key, v->get<float>());
  };
  u32("block_count", {"num_hidden_layers", "n_layer"});
  u32("context_length", {"max_position_embeddings", "n_positions"});
  u32("embedding_length", {"hidden_size", "n_embd"});
  u32("feed_forward_length", {"intermediate_size", "n_inner"});
  if (arch == "gpt2" && !first({"n_inner"})) w.u32("gpt2.feed_forward_length", 4 * c["n_embd"].get<uint32_t>());
  u32("attention.head_count", {"num_attention_heads", "n_head"});
  u32("attention.head_count_kv", {"num_key_value_heads"});
  if (arch != "deepseek2") u32("attention.key_length", {"head_dim"});
  u32("vocab_size", {"vocab_size"});
  u32("expert_count", {"num_experts", "num_local_experts"});
  u32("expert_used_count", {"num_experts_per_tok"});
  u32("expert_feed_forward_length", {"moe_intermediate_size"});
  if (arch == "deepseek2") {  // MLA's sizes as llama.cpp's converter writes them
    u32("expert_count", {"n_routed_experts"});
    u32("expert_shared_count", {"n_shared_experts"});
    u32("leading_dense_block_count", {"first_k_dense_replace"});
    u32("attention.kv_lora_rank", {"kv_lora_rank"});
    u32("rope.dimension_count", {"qk_rope_head_dim"});
    u32("attention.value_length_mla", {"v_head_dim"});
    w.u32("deepseek2.attention.key_length_mla", c["qk_nope_head_dim"].get<uint32_t>() + c["qk_rope_head_dim"].get<uint32_t>());
    f32("expert_weights_scale", {"routed_scaling_factor"});
    w.u32("deepseek2.expert_gating_func", 1);  // softmax
  }
  f32("attention.layer_norm_rms_epsilon", {"rms_norm_eps"});
  f32("attention.layer_norm_epsilon", {"layer_norm_epsilon", "norm_epsilon"});
  f32("rope.freq_base", {"rope_theta"});
  u32("rope.scaling.original_context_length", {"original_max_position_embeddings"});
  if (arch == "phi3") {  // the rotated dims, as the converter counts them
    const auto hidden = c["hidden_size"].get<int64_t>(), heads = c["num_attention_heads"].get<int64_t>();
    w.u32("phi3.rope.dimension_count", uint32_t(int64_t(c.value("partial_rotary_factor", 1.0) * double(hidden)) / heads));
  }
}

// Llama 3.1's rope_scaling as the converter stores it: one divisor per
// rotated pair, rope_freqs.weight.
std::vector<float> llama3_divisors(const nlohmann::json& c) {
  const auto& s = c["rope_scaling"];
  const int64_t dim = c.value("head_dim", c["hidden_size"].get<int64_t>() / c["num_attention_heads"].get<int64_t>());
  const double factor = s["factor"], low = s["low_freq_factor"], high = s["high_freq_factor"],
               old = s["original_max_position_embeddings"], theta = c["rope_theta"];
  std::vector<float> out;
  for (int64_t i = 0; i < dim; i += 2) {
    const float freq = float(1.0 / std::pow(theta, double(i) / double(dim)));
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < old / high) out.push_back(1);
    else if (wavelen > old / low) out.push_back(float(factor));
    else {
      const double smooth = (old / wavelen - low) / (high - low);
      out.push_back(float(1 / ((1 - smooth) / factor + smooth)));
    }
  }
  return out;
}

class GgufFamily : public ::testing::TestWithParam<Case> {};

TEST_P(GgufFamily, ReadThroughItsMapGivesTransformersLogits) {
  const Case& k = GetParam();
  const std::string dir = golden_dir(k.golden);
  ARCH_REQUIRE_SHARED(dir);
  const auto config = read_json(dir + "/config.json");
  auto hf = read_safetensors(dir + "/model.safetensors");
  ASSERT_TRUE(hf.ok()) << hf.error().message;
  testing::GgufWriter w;
  write_config(w, k.arch, config);
  std::vector<float> divisors;
  if (config.contains("rope_scaling") && config["rope_scaling"].is_object() &&
      config["rope_scaling"].value("rope_type", "") == "llama3") {
    divisors = llama3_divisors(config);
    w.tensor("rope_freqs.weight", {divisors.size()}, divisors.data());
  }
  std::vector<float> long_factor, short_factor;  // Phi-3's LongRoPE, as tensors
  if (config.contains("rope_scaling") && config["rope_scaling"].is_object() &&
      config["rope_scaling"].contains("long_factor")) {
    long_factor = config["rope_scaling"]["long_factor"].get<std::vector<float>>();
    short_factor = config["rope_scaling"]["short_factor"].get<std::vector<float>>();
    w.tensor("rope_factors_long.weight", {long_factor.size()}, long_factor.data());
    w.tensor("rope_factors_short.weight", {short_factor.size()}, short_factor.data());
  }
  std::vector<std::vector<float>> keep;
  std::map<std::string, std::vector<const Tensor*>> experts;  // llama.cpp's stacked name -> each expert's matrix
  for (const auto& [name, t] : hf->tensors) {
    if (name.find(".experts.") != std::string::npos) {
      const std::string to = gguf_name(*k.names, name);
      ASSERT_FALSE(to.empty()) << name;
      const size_t at = name.find(".experts.") + 9;
      const size_t e = std::stoul(name.substr(at));
      auto& list = experts[to];
      if (list.size() <= e) list.resize(e + 1);
      list[e] = &t;
      continue;
    }
    const std::string to = gguf_name(*k.names, name);
    ASSERT_FALSE(to.empty()) << name << " has no llama.cpp name here";
    ASSERT_EQ(t.dtype, DType::F32) << name;
    std::vector<float> v(t.f32(), t.f32() + t.numel());
    Dims shape = t.shape;
    if (k.arch == "llama" && (to.find("attn_q.") != std::string::npos || to.find("attn_k.") != std::string::npos)) {
      // llama.cpp's rows: each head's halves interleaved.
      const int64_t heads = to.find("attn_q.") != std::string::npos ? config["num_attention_heads"].get<int64_t>()
                                                                    : config["num_key_value_heads"].get<int64_t>();
      const int64_t rows = shape[0], cols = t.numel() / rows, hd = rows / heads;
      std::vector<float> out(v.size());
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < hd / 2; ++i)
          for (int64_t c = 0; c < cols; ++c) {
            out[size_t((h * hd + 2 * i) * cols + c)] = v[size_t((h * hd + i) * cols + c)];
            out[size_t((h * hd + 2 * i + 1) * cols + c)] = v[size_t((h * hd + hd / 2 + i) * cols + c)];
          }
      v = out;
    }
    if (k.arch.rfind("gemma", 0) == 0 && name.size() > 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0)
      for (float& x : v) x += 1;  // Gemma's 1 + w
    if (k.arch == "gpt2" && shape.size() == 2 && to.find("embd") == std::string::npos) {
      std::vector<float> out(v.size());  // Conv1D's [in, out] stored [out, in]
      for (int64_t r = 0; r < shape[0]; ++r)
        for (int64_t c = 0; c < shape[1]; ++c) out[size_t(c * shape[0] + r)] = v[size_t(r * shape[1] + c)];
      v = out;
      std::swap(shape[0], shape[1]);
    }
    if (to.find("attn_kv_b") != std::string::npos) {
      // Newer converters: k_b [heads, rank, nope] (each head's part
      // transposed) and v_b [heads, v, rank].
      const int64_t heads = config["num_key_value_heads"].get<int64_t>(), nope = config["qk_nope_head_dim"].get<int64_t>(),
                    vd = config["v_head_dim"].get<int64_t>(), rank = shape[1];
      std::vector<float> k_b, v_b;
      for (int64_t h = 0; h < heads; ++h) {
        const float* base = v.data() + h * (nope + vd) * rank;
        for (int64_t r = 0; r < rank; ++r)
          for (int64_t n = 0; n < nope; ++n) k_b.push_back(base[n * rank + r]);
        v_b.insert(v_b.end(), base + nope * rank, base + (nope + vd) * rank);
      }
      const std::string block = to.substr(0, to.find(".attn_kv_b"));
      w.tensor(block + ".attn_k_b.weight", {uint64_t(nope), uint64_t(rank), uint64_t(heads)}, k_b.data());
      w.tensor(block + ".attn_v_b.weight", {uint64_t(rank), uint64_t(vd), uint64_t(heads)}, v_b.data());
      continue;
    }
    keep.push_back(std::move(v));
    w.tensor(to, std::vector<uint64_t>(shape.rbegin(), shape.rend()), keep.back().data());
  }
  for (const auto& [to, list] : experts) {
    std::vector<float> stacked;
    for (const Tensor* t : list) stacked.insert(stacked.end(), t->f32(), t->f32() + t->numel());
    keep.push_back(std::move(stacked));
    w.tensor(to, {uint64_t(list[0]->shape[1]), uint64_t(list[0]->shape[0]), list.size()}, keep.back().data());
  }
  testing::TempDir tmp;
  const std::string path = tmp / (k.golden + ".gguf");
  testing::write_file(path, w.bytes());

  auto model = load_model(path);
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_TRUE((*model)->warnings.empty()) << (*model)->warnings.front();
  auto ids = read_json(dir + "/inputs.json")["input_ids"].get<std::vector<int32_t>>();
  Session s(**model, int64_t(ids.size()));
  auto outs = s.step(ids);
  ASSERT_TRUE(outs.ok()) << outs.error().message;
  auto expected = read_safetensors(dir + "/expected.safetensors");
  ASSERT_TRUE(expected.ok());
  const Tensor& ref = expected->tensors.at("logits");
  const Tensor& got = outs->at("logits");
  ASSERT_EQ(got.numel(), ref.numel());
  auto c = testing::compare_f32(got.f32(), ref.f32(), ref.numel());
  EXPECT_TRUE(c.ok()) << k.golden << ": logits differ by " << c.max_abs << " (allowed " << c.bound << ")";
}

INSTANTIATE_TEST_SUITE_P(Maps, GgufFamily,
                         ::testing::Values(Case{"llama", "llama", &kDecoderNames}, Case{"qwen2", "qwen2", &kDecoderNames},
                                           Case{"qwen3", "qwen3", &kDecoderNames}, Case{"gemma", "gemma", &kDecoderNames},
                                           Case{"phi3", "phi3", &kDecoderNames}, Case{"gpt2", "gpt2", &kGpt2Names},
                                           Case{"qwen3_moe", "qwen3moe", &kDecoderNames},
                                           Case{"deepseek_v2_lite", "deepseek2", &kDecoderNames},
                                           Case{"mixtral", "llama", &kDecoderNames},
                                           Case{"llama3_rope", "llama", &kDecoderNames},
                                           Case{"phi3_longrope", "phi3", &kDecoderNames}),
                         [](const auto& info) { return info.param.golden; });

}  // namespace
}  // namespace arch

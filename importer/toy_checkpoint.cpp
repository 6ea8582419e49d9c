#include "importer/toy_checkpoint.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tensor.h"
#include "importer/safetensors.h"

namespace arch {

namespace {

// The toy's shape; names as in config.json.
constexpr int64_t vocab_size = 256;
constexpr int64_t hidden_size = 64;
constexpr int64_t num_hidden_layers = 2;
constexpr int64_t num_attention_heads = 4;
constexpr int64_t num_key_value_heads = 2;
constexpr int64_t head_dim = 16;
constexpr int64_t intermediate_size = 128;

nlohmann::ordered_json toy_config() {
  return {
      {"architectures", nlohmann::ordered_json::array({"LlamaForCausalLM"})},
      {"model_type", "llama"},
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"num_hidden_layers", num_hidden_layers},
      {"num_attention_heads", num_attention_heads},
      {"num_key_value_heads", num_key_value_heads},
      {"head_dim", head_dim},
      {"intermediate_size", intermediate_size},
      {"max_position_embeddings", 256},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", false},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
      {"dtype", "float32"},
  };
}

// Standard normal draws from mt19937_64 (whose output the C++ standard fixes)
// by Box-Muller, rather than std::normal_distribution, whose algorithm each
// standard library picks for itself.
class NormalSource {
 public:
  explicit NormalSource(uint64_t seed) : bits_(seed) {}

  double next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    double u1 = 1.0 - uniform();  // (0, 1]: log(u1) is finite
    double u2 = uniform();
    double r = std::sqrt(-2.0 * std::log(u1));
    constexpr double two_pi = 6.283185307179586476925286766559;
    spare_ = r * std::sin(two_pi * u2);
    has_spare_ = true;
    return r * std::cos(two_pi * u2);
  }

 private:
  double uniform() { return double(bits_() >> 11) * 0x1.0p-53; }  // [0, 1), 53 random bits

  std::mt19937_64 bits_;
  double spare_ = 0.0;
  bool has_spare_ = false;
};

// An F32 tensor of `base + std * N(0, 1)` draws.
Tensor draw(NormalSource& normal, Dims shape, double base, double std) {
  Tensor t = Tensor::zeros(DType::F32, std::move(shape));
  float* w = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) w[i] = float(base + std * normal.next());
  return t;
}

// A linear layer's weight [out, in], scaled so activations keep unit size.
Tensor linear(NormalSource& normal, int64_t out, int64_t in) {
  return draw(normal, {out, in}, 0.0, 1.0 / std::sqrt(double(in)));
}

Tensor norm(NormalSource& normal, int64_t n) { return draw(normal, {n}, 1.0, 0.1); }

// Every tensor LlamaForCausalLM's save_pretrained writes for the toy config,
// in module order.
std::vector<std::pair<std::string, Tensor>> toy_tensors(uint64_t seed) {
  NormalSource normal(seed);
  const int64_t q_out = num_attention_heads * head_dim;   // 64
  const int64_t kv_out = num_key_value_heads * head_dim;  // 32
  std::vector<std::pair<std::string, Tensor>> t;
  t.emplace_back("model.embed_tokens.weight", draw(normal, {vocab_size, hidden_size}, 0.0, 1.0));
  for (int64_t i = 0; i < num_hidden_layers; ++i) {
    std::string L = "model.layers." + std::to_string(i) + ".";
    t.emplace_back(L + "input_layernorm.weight", norm(normal, hidden_size));
    t.emplace_back(L + "self_attn.q_proj.weight", linear(normal, q_out, hidden_size));
    t.emplace_back(L + "self_attn.k_proj.weight", linear(normal, kv_out, hidden_size));
    t.emplace_back(L + "self_attn.v_proj.weight", linear(normal, kv_out, hidden_size));
    t.emplace_back(L + "self_attn.o_proj.weight", linear(normal, hidden_size, q_out));
    t.emplace_back(L + "post_attention_layernorm.weight", norm(normal, hidden_size));
    t.emplace_back(L + "mlp.gate_proj.weight", linear(normal, intermediate_size, hidden_size));
    t.emplace_back(L + "mlp.up_proj.weight", linear(normal, intermediate_size, hidden_size));
    t.emplace_back(L + "mlp.down_proj.weight", linear(normal, hidden_size, intermediate_size));
  }
  t.emplace_back("model.norm.weight", norm(normal, hidden_size));
  t.emplace_back("lm_head.weight", linear(normal, vocab_size, hidden_size));
  return t;
}

Status write_text(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return error(path + ": cannot create: " + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  int saved_errno = errno;
  if (std::fclose(f) != 0 && ok) ok = false, saved_errno = errno;
  if (!ok) return error(path + ": cannot write: " + std::strerror(saved_errno));
  return {};
}

}  // namespace

Status write_toy_checkpoint(const std::string& dir, uint64_t seed) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error(dir + ": cannot create directory: " + ec.message());
  ARCH_TRY_STATUS(write_text((fs::path(dir) / "config.json").string(), toy_config().dump(2) + "\n"));
  return write_safetensors((fs::path(dir) / "model.safetensors").string(), toy_tensors(seed),
                           {{"format", "pt"}});
}

}  // namespace arch

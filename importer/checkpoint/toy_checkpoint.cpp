#include "importer/checkpoint/toy_checkpoint.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/tensor.h"
#include "importer/checkpoint/safetensors.h"

namespace arch {

namespace {

nlohmann::ordered_json config_of(const LlamaShape& m) {
  nlohmann::ordered_json c = {
      {"architectures", nlohmann::ordered_json::array({m.model_type == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"})},
      {"model_type", m.model_type},
      {"vocab_size", m.vocab_size},
      {"hidden_size", m.hidden_size},
      {"num_hidden_layers", m.num_hidden_layers},
      {"num_attention_heads", m.num_attention_heads},
      {"num_key_value_heads", m.num_key_value_heads},
      {"head_dim", m.head_dim},
      {"intermediate_size", m.intermediate_size},
      {"max_position_embeddings", m.max_position_embeddings},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", m.rope_theta},
      {"hidden_act", "silu"},
      {"tie_word_embeddings", m.tied},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"bos_token_id", 1},
      {"eos_token_id", 2},
      {"dtype", m.bf16 ? "bfloat16" : "float32"},
  };
  return c;
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

// A tensor of `base + std * N(0, 1)` draws, F32 or rounded to BF16.
Tensor draw(NormalSource& normal, Dims shape, double base, double std, bool bf16) {
  Tensor t = Tensor::zeros(bf16 ? DType::BF16 : DType::F32, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) {
    float v = float(base + std * normal.next());
    if (bf16) static_cast<uint16_t*>(t.data)[i] = f32_to_bf16(v);
    else t.f32()[i] = v;
  }
  return t;
}

// One tensor to draw: `base + std * N(0, 1)` of this shape.
struct TensorSpec {
  std::string name;
  Dims shape;
  double base, std;
};

// Every tensor save_pretrained writes for such a model, in module order;
// linear weights [out, in] scaled so activations keep unit size, norms near 1.
std::vector<TensorSpec> specs_of(const LlamaShape& m) {
  auto linear = [&](std::string name, int64_t out, int64_t in) {
    return TensorSpec{std::move(name), {out, in}, 0.0, 1.0 / std::sqrt(double(in))};
  };
  auto norm = [&](std::string name, int64_t n) { return TensorSpec{std::move(name), {n}, 1.0, 0.1}; };
  const int64_t q_out = m.num_attention_heads * m.head_dim;
  const int64_t kv_out = m.num_key_value_heads * m.head_dim;
  std::vector<TensorSpec> t;
  t.push_back({"model.embed_tokens.weight", {m.vocab_size, m.hidden_size}, 0.0, 1.0});
  for (int64_t i = 0; i < m.num_hidden_layers; ++i) {
    std::string L = "model.layers." + std::to_string(i) + ".";
    t.push_back(norm(L + "input_layernorm.weight", m.hidden_size));
    t.push_back(linear(L + "self_attn.q_proj.weight", q_out, m.hidden_size));
    t.push_back(linear(L + "self_attn.k_proj.weight", kv_out, m.hidden_size));
    t.push_back(linear(L + "self_attn.v_proj.weight", kv_out, m.hidden_size));
    if (m.qkv_bias) {  // Qwen2
      t.push_back({L + "self_attn.q_proj.bias", {q_out}, 0.0, 0.1});
      t.push_back({L + "self_attn.k_proj.bias", {kv_out}, 0.0, 0.1});
      t.push_back({L + "self_attn.v_proj.bias", {kv_out}, 0.0, 0.1});
    }
    t.push_back(linear(L + "self_attn.o_proj.weight", m.hidden_size, q_out));
    t.push_back(norm(L + "post_attention_layernorm.weight", m.hidden_size));
    t.push_back(linear(L + "mlp.gate_proj.weight", m.intermediate_size, m.hidden_size));
    t.push_back(linear(L + "mlp.up_proj.weight", m.intermediate_size, m.hidden_size));
    t.push_back(linear(L + "mlp.down_proj.weight", m.hidden_size, m.intermediate_size));
  }
  t.push_back(norm("model.norm.weight", m.hidden_size));
  if (!m.tied) t.push_back(linear("lm_head.weight", m.vocab_size, m.hidden_size));
  return t;
}

// The tensors drawn in order from one generator (so a seed gives the same
// file), `progress` told after each.
std::vector<std::pair<std::string, Tensor>> tensors_of(const LlamaShape& m, uint64_t seed,
                                                       const ToyProgress& progress) {
  NormalSource normal(seed);
  const std::vector<TensorSpec> specs = specs_of(m);
  std::vector<std::pair<std::string, Tensor>> t;
  for (const TensorSpec& spec : specs) {
    t.emplace_back(spec.name, draw(normal, spec.shape, spec.base, spec.std, m.bf16));
    if (progress) progress(int64_t(t.size()), int64_t(specs.size()), spec.name);
  }
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

std::optional<LlamaShape> llama_shape(const std::string& name) {
  LlamaShape m;
  if (name == "toy") return m;
  if (name == "qwen2.5-0.5b") {
    m.model_type = "qwen2";
    m.vocab_size = 151936, m.hidden_size = 896, m.num_hidden_layers = 24, m.num_attention_heads = 14;
    m.num_key_value_heads = 2, m.head_dim = 64, m.intermediate_size = 4864, m.rope_theta = 1e6;
    m.max_position_embeddings = 32768, m.tied = true, m.qkv_bias = true;
    return m;
  }
  if (name == "llama-3.2-1b") {
    m.vocab_size = 128256, m.hidden_size = 2048, m.num_hidden_layers = 16, m.num_attention_heads = 32;
    m.num_key_value_heads = 8, m.head_dim = 64, m.intermediate_size = 8192, m.rope_theta = 500000.0;
    m.max_position_embeddings = 131072, m.tied = true;
    return m;
  }
  return std::nullopt;
}

Status write_random_checkpoint(const std::string& dir, const LlamaShape& shape, uint64_t seed,
                               const ToyProgress& progress) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error(dir + ": cannot create directory: " + ec.message());
  ARCH_TRY_STATUS(write_text((fs::path(dir) / "config.json").string(), config_of(shape).dump(2) + "\n"));
  return write_safetensors((fs::path(dir) / "model.safetensors").string(), tensors_of(shape, seed, progress),
                           {{"format", "pt"}});
}

namespace {

// The names a spec's pattern stands for: each `{i<N}` segment 0 .. N-1,
// each `{M<=i<N}` M .. N-1 (DeepSeek's MoE layers after its dense ones).
Result<std::vector<std::string>> expand_layers(const std::string& pattern, const std::string& spec_path) {
  const size_t open = pattern.find('{');
  if (open == std::string::npos) return std::vector<std::string>{pattern};
  const size_t close = pattern.find('}', open);
  const size_t lt = pattern.rfind('<', close);
  if (close == std::string::npos || lt == std::string::npos || lt < open)
    return error(spec_path + ": tensor '" + pattern + "': a layer segment is written {i<N} or {M<=i<N}");
  auto number = [](const std::string& t) {
    return !t.empty() && t.size() < 10 && t.find_first_not_of("0123456789") == std::string::npos;
  };
  const std::string count = pattern.substr(lt + 1, close - lt - 1);
  if (!number(count)) return error(spec_path + ": tensor '" + pattern + "': N in {i<N} must be a number");
  int64_t first = 0;
  if (const size_t le = pattern.find("<=", open); le < lt) {
    const std::string from = pattern.substr(open + 1, le - open - 1);
    if (!number(from)) return error(spec_path + ": tensor '" + pattern + "': M in {M<=i<N} must be a number");
    first = std::stoll(from);
  }
  std::vector<std::string> out;
  for (int64_t i = first; i < std::stoll(count); ++i) {
    ARCH_TRY(auto rest, expand_layers(pattern.substr(close + 1), spec_path));
    for (auto& r : rest) out.push_back(pattern.substr(0, open) + std::to_string(i) + r);
  }
  return out;
}

Result<nlohmann::ordered_json> read_spec(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return error(path + ": cannot open: " + std::strerror(errno));
  std::string text;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  std::fclose(f);
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_object() && j.contains("pipeline")) return j;  // a pipeline's spec: its components' specs
  if (!j.is_object() || !j.contains("config") || !j["config"].is_object() || !j.contains("tensors") ||
      !j["tensors"].is_array())
    return error(path + ": not a toy spec (a JSON object with \"config\" and \"tensors\": [[name, shape], ...], or \"pipeline\")");
  return j;
}

}  // namespace

Status write_toy_from_spec(const std::string& spec_path, const std::string& dir, uint64_t seed, bool bf16,
                           const ToyProgress& progress) {
  namespace fs = std::filesystem;
  ARCH_TRY(nlohmann::ordered_json spec, read_spec(spec_path));
  if (spec.contains("pipeline")) {
    // A pipeline folder: model_index.json, each component from its own spec
    // (beside this one) in its folder, the scheduler's config.
    const auto& p = spec["pipeline"];
    if (!p.is_object() || !p.contains("model_index") || !p.contains("components") || !p["components"].is_object())
      return error(spec_path + ": a pipeline spec holds model_index, components and scheduler_config");
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) return error(dir + ": cannot create directory: " + ec.message());
    ARCH_TRY_STATUS(write_text((fs::path(dir) / "model_index.json").string(), p["model_index"].dump(2) + "\n"));
    uint64_t k = 0;
    for (const auto& [name, file] : p["components"].items()) {
      if (!file.is_string()) return error(spec_path + ": component " + name + " must name a spec file");
      const std::string sub = (fs::path(spec_path).parent_path() / file.get<std::string>()).string();
      ARCH_TRY_STATUS(write_toy_from_spec(sub, (fs::path(dir) / name).string(), seed + ++k, bf16, progress));
    }
    if (p.contains("scheduler_config")) {
      fs::create_directories(fs::path(dir) / "scheduler", ec);
      ARCH_TRY_STATUS(write_text((fs::path(dir) / "scheduler" / "scheduler_config.json").string(),
                                 p["scheduler_config"].dump(2) + "\n"));
    }
    return {};
  }
  std::vector<TensorSpec> specs;
  for (const auto& t : spec["tensors"]) {
    if (!t.is_array() || t.size() < 2 || t.size() > 3 || !t[0].is_string() || !t[1].is_array() ||
        (t.size() == 3 && !t[2].is_number()))
      return error(spec_path + ": each tensor is [name, [dims]] or [name, [dims], value], not " + t.dump());
    Dims shape;
    for (const auto& d : t[1]) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        return error(spec_path + ": tensor " + t[0].get<std::string>() + ": dims must be positive integers");
      shape.push_back(d.get<int64_t>());
    }
    ARCH_TRY(auto names, expand_layers(t[0].get<std::string>(), spec_path));
    for (auto& name : names) {
      int64_t fan_in = 1;
      for (size_t k = 1; k < shape.size(); ++k) fan_in *= shape[k];
      const bool table = name.find("embed") != std::string::npos || name.find("shared") != std::string::npos;
      const bool norm = name.find("norm") != std::string::npos && name.ends_with(".weight");
      if (t.size() == 3) specs.push_back({name, shape, t[2].get<double>(), 0.0});  // every element that value
      else if (shape.size() >= 2) specs.push_back({name, shape, 0.0, table ? 1.0 : 1.0 / std::sqrt(double(fan_in))});
      else specs.push_back({name, shape, norm ? 1.0 : 0.0, norm ? 0.1 : 0.02});
    }
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return error(dir + ": cannot create directory: " + ec.message());
  ARCH_TRY_STATUS(write_text((fs::path(dir) / "config.json").string(), spec["config"].dump(2) + "\n"));
  if (spec.contains("generation_config"))
    ARCH_TRY_STATUS(write_text((fs::path(dir) / "generation_config.json").string(),
                               spec["generation_config"].dump(2) + "\n"));
  if (spec.contains("files")) {  // side files as they are (a voice's vocab.json, tokenizer_config.json)
    if (!spec["files"].is_object()) return error(spec_path + ": \"files\" maps a file name to its JSON");
    for (const auto& [name, body] : spec["files"].items()) {
      if (name.empty() || name.find('/') != std::string::npos || name.starts_with("."))
        return error(spec_path + ": file '" + name + "' must be a plain name in the model folder");
      ARCH_TRY_STATUS(write_text((fs::path(dir) / name).string(), body.dump(2) + "\n"));
    }
  }
  // Each tensor drawn as it is written, in order (the same draws as all at
  // once): a 15B shape is more than memory holds.
  NormalSource normal(seed);
  std::vector<std::pair<std::string, Tensor>> layout;
  for (const TensorSpec& t : specs) layout.emplace_back(t.name, Tensor::view(bf16 ? DType::BF16 : DType::F32, t.shape, nullptr, nullptr));
  return write_safetensors((fs::path(dir) / "model.safetensors").string(), layout, {{"format", "pt"}},
                           [&](size_t i) -> Result<Tensor> {
                             const TensorSpec& t = specs[i];
                             Tensor drawn = draw(normal, t.shape, t.base, t.std, bf16);
                             if (progress) progress(int64_t(i) + 1, int64_t(specs.size()), t.name);
                             return drawn;
                           });
}

Status write_toy_checkpoint(const std::string& dir, uint64_t seed) {
  return write_random_checkpoint(dir, LlamaShape{}, seed);
}

}  // namespace arch

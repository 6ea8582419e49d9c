// SD3 and Flux pipeline folders built from the component goldens, for the
// tests (tests/golden/mmdit_pipeline_test.cpp says why): the transformer
// is the sd3 or flux golden itself, the text encoders and the VAE the
// clip_text, t5 and vae_sd15 goldens' layouts at the widths it takes, with
// random weights.
#pragma once

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <gtest/gtest.h>

#include "engine/runtime/forward.h"
#include "importer/checkpoint/safetensors.h"
#include "importer/checkpoint/toy_checkpoint.h"
#include "tests/golden/golden_case.h"

namespace arch::testing {

namespace fs = std::filesystem;


// A component folder of random weights in golden `golden`'s layout: its
// config with `changes`, each tensor's dims mapped by `dims` (then by
// `reshape`, by name), tensors under `drop` left out, `extra` added.
inline void component_like(const std::string& golden, const std::string& weights, const nlohmann::json& changes,
                    const std::map<int64_t, int64_t>& dims, const fs::path& out, const std::vector<std::string>& drop = {},
                    const std::vector<std::pair<std::string, Dims>>& extra = {},
                    const std::function<void(const std::string&, Dims&)>& reshape = nullptr) {
  const std::string dir = golden_dir(golden);
  nlohmann::json config = read_json(dir + "/config.json");
  config.update(changes);
  auto file = read_safetensors(dir + "/" + weights);
  ASSERT_TRUE(file.ok()) << file.error().message;
  nlohmann::json tensors = nlohmann::json::array();
  for (const auto& [name, t] : file->tensors) {
    if (std::any_of(drop.begin(), drop.end(), [&](const std::string& d) { return name.rfind(d, 0) == 0; })) continue;
    Dims shape = t.shape;
    for (int64_t& d : shape)
      if (auto it = dims.find(d); it != dims.end()) d = it->second;
    if (reshape) reshape(name, shape);
    tensors.push_back({name, shape});
  }
  for (const auto& [name, shape] : extra) tensors.push_back({name, shape});
  fs::create_directories(out);
  const std::string spec = (out.parent_path() / (out.filename().string() + ".spec.json")).string();
  std::ofstream(spec) << nlohmann::json{{"config", config}, {"tensors", tensors}}.dump();
  Status st = write_toy_from_spec(spec, out.string(), 7);
  ASSERT_TRUE(st.ok()) << st.error().message;
}

inline void write_json(const fs::path& path, const nlohmann::json& j) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << j.dump(1);
}

inline Tensor ids_tensor(const std::vector<int32_t>& ids) {
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.i32());
  return t;
}

inline Tensor output_of(const Model& m, const std::vector<int32_t>& ids, const std::string& name) {
  auto out = forward(m, {{"input_ids", ids_tensor(ids)}}, {name});
  EXPECT_TRUE(out.ok()) << out.error().message;
  return out.ok() ? out->at(name) : Tensor{};
}

inline const char* const kClipWeights = "model.safetensors";

// The T5 golden's encoder at d_model 48 (4 heads of 12), as T5EncoderModel.
inline void t5_encoder(const fs::path& out) {
  component_like("t5", kClipWeights, {{"d_model", 48}, {"d_kv", 12}, {"architectures", {"T5EncoderModel"}}}, {{64, 48}}, out,
                 {"decoder.", "lm_head."});
}

inline Tensor latents_of(const Dims& shape) {
  Tensor t = Tensor::zeros(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = float((i * 37) % 19) / 9.5f - 1.0f;
  return t;
}

// StableDiffusion3Pipeline: two CLIPs with projections, a T5 encoder, the
// sd3 golden transformer, a 16-channel shifted VAE; FlowMatch shift 3.
inline void make_sd3_pipeline(const fs::path& dir) {
  // CLIP-L 8 wide, projecting to 16; CLIP-G 32 wide, projecting to 24:
  // 8 + 32 under the transformer's joint_attention_dim 48 (zero-padded to
  // it), 16 + 24 its pooled_projection_dim 40.
  component_like("clip_text", kClipWeights, {{"hidden_size", 8}, {"projection_dim", 16}, {"architectures", {"CLIPTextModelWithProjection"}}},
                 {{32, 8}}, dir / "text_encoder", {}, {{"text_projection.weight", {16, 8}}});
  component_like("clip_text", kClipWeights, {{"projection_dim", 24}, {"architectures", {"CLIPTextModelWithProjection"}}}, {},
                 dir / "text_encoder_2", {}, {{"text_projection.weight", {24, 32}}});
  t5_encoder(dir / "text_encoder_3");
  // The VAE at 16 latent channels, shifted.
  component_like("vae_sd15", "diffusion_pytorch_model.safetensors", {{"latent_channels", 16}, {"shift_factor", 0.0609}, {"scaling_factor", 1.5305}},
                 {}, dir / "vae", {}, {}, [](const std::string& name, Dims& s) {
                   if (name.rfind("encoder.conv_out.", 0) == 0 || name.rfind("quant_conv.", 0) == 0) s[0] = 32;
                   if (name == "quant_conv.weight") s[1] = 32;
                   if (name.rfind("post_quant_conv.", 0) == 0) s[0] = 16;
                   if (name == "post_quant_conv.weight" || name == "decoder.conv_in.weight") s[1] = 16;
                 });
  fs::create_directory_symlink(golden_dir("sd3"), dir / "transformer");
  write_json(dir / "scheduler" / "scheduler_config.json", {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"shift", 3.0}});
  auto pair = [](const char* a, const char* b) { return nlohmann::json::array({a, b}); };
  write_json(dir / "model_index.json",
             {{"_class_name", "StableDiffusion3Pipeline"}, {"text_encoder", pair("transformers", "CLIPTextModelWithProjection")},
              {"text_encoder_2", pair("transformers", "CLIPTextModelWithProjection")}, {"text_encoder_3", pair("transformers", "T5EncoderModel")},
              {"transformer", pair("diffusers", "SD3Transformer2DModel")}, {"vae", pair("diffusers", "AutoencoderKL")},
              {"scheduler", pair("diffusers", "FlowMatchEulerDiscreteScheduler")}});
}

// FluxPipeline: a CLIP, a T5 encoder, the flux golden transformer, the SD
// VAE golden; FlowMatch with the resolution-dependent shift.
inline void make_flux_pipeline(const fs::path& dir) {
  // CLIP 40 wide (the pooled_projection_dim), the T5 48 (joint_attention_dim),
  // the SD VAE golden itself: 4 latent channels, packed 2x2 into the 16 the
  // transformer takes.
  component_like("clip_text", kClipWeights, {{"hidden_size", 40}}, {{32, 40}}, dir / "text_encoder");
  t5_encoder(dir / "text_encoder_2");
  fs::create_directory_symlink(golden_dir("flux"), dir / "transformer");
  fs::create_directory_symlink(golden_dir("vae_sd15"), dir / "vae");
  write_json(dir / "scheduler" / "scheduler_config.json",
             {{"_class_name", "FlowMatchEulerDiscreteScheduler"}, {"use_dynamic_shifting", true}, {"shift", 3.0}});
  auto pair = [](const char* a, const char* b) { return nlohmann::json::array({a, b}); };
  write_json(dir / "model_index.json",
             {{"_class_name", "FluxPipeline"}, {"text_encoder", pair("transformers", "CLIPTextModel")},
              {"text_encoder_2", pair("transformers", "T5EncoderModel")}, {"transformer", pair("diffusers", "FluxTransformer2DModel")},
              {"vae", pair("diffusers", "AutoencoderKL")}, {"scheduler", pair("diffusers", "FlowMatchEulerDiscreteScheduler")}});
}

}  // namespace arch::testing

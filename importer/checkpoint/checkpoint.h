// A Hugging Face checkpoint directory: config.json plus weights in one
// safetensors file or several shards named by an index.
//
//   ARCH_TRY(Checkpoint ckpt, load_checkpoint("models/llama"));
//   const Tensor* wq = ckpt.find("model.layers.0.self_attn.q_proj.weight");
#pragma once

#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

struct Checkpoint {
  std::string dir;
  nlohmann::json config;                           // normalised, see config.h
  std::map<std::string, Tensor> tensors;           // views into the mapped files
  std::map<std::string, std::string> tensor_file;  // which file holds each tensor, for messages

  bool has(const std::string& name) const { return tensors.count(name) != 0; }
  const Tensor* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : &it->second;
  }
  // A tensor's shape (nullopt: no such tensor), as a template's `[*]` takes it.
  std::optional<Dims> shape_of(const std::string& name) const {
    const Tensor* t = find(name);
    return t ? std::optional<Dims>(t->shape) : std::nullopt;
  }
};

// Weights are looked for in this order: model.safetensors;
// model.safetensors.index.json with its shards; the same two under
// diffusers' name (diffusion_pytorch_model.*); else the directory's only
// *.safetensors file. FP8 tensors are dequantized with their block scales,
// which are consumed (fp8_weights.h). A header's __metadata__ alias (as
// safetensors' save_model writes for a shared tensor stored once:
// {"model.embed_tokens.weight": "lm_head.weight"}) names the stored
// tensor's bytes too. Errors name the directory, file and tensor.
// A GGUF file (gguf_checkpoint.h) is read through the name maps in
// `gguf_maps` (default: families/gguf); a canonical file as import wrote it.
Result<Checkpoint> load_checkpoint(const std::string& dir, const std::string& gguf_maps = "");

}  // namespace arch

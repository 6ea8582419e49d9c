#include "engine/runtime/pipeline_prompts.h"

#include <algorithm>

#include "engine/runtime/forward.h"

namespace arch {

namespace {

// One encoder on a prompt's ids: the outputs asked, the failure named.
Result<NamedTensors> encode(const Pipeline& p, const Model& m, const char* folder, const std::vector<int32_t>& ids,
                            const std::string& what, const std::vector<std::string>& outputs) {
  if (ids.empty()) return error("the " + what + " has no token ids" + (std::string(folder) == "text_encoder" ? "" : " for " + std::string(folder)));
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.i32());
  auto out = forward(m, {{"input_ids", t}}, outputs);
  if (!out.ok()) return error(p.dir + ": " + folder + " on the " + what + ": " + out.error().message);
  return out;
}

// Rows of a, then rows of b: [na + nb, width] (a's rows zero-padded to b's width).
Tensor rows_then(const Tensor& a, const Tensor& b) {
  const int64_t na = a.dim(0), wa = a.dim(1), nb = b.dim(0), w = b.dim(1);
  Tensor out = Tensor::zeros(DType::F32, {na + nb, w});
  for (int64_t i = 0; i < na; ++i) std::copy(a.f32() + i * wa, a.f32() + (i + 1) * wa, out.f32() + i * w);
  std::copy(b.f32(), b.f32() + nb * w, out.f32() + na * w);
  return out;
}

// Each row of a beside the same row of b: [n, wa + wb].
Result<Tensor> side_by_side(const Tensor& a, const Tensor& b, const std::string& what) {
  if (a.dim(0) != b.dim(0))
    return error("the " + what + "'s id lists for the two CLIP encoders differ in length (" + std::to_string(a.dim(0)) +
                 ", " + std::to_string(b.dim(0)) + ")");
  const int64_t n = a.dim(0), wa = a.dim(1), wb = b.dim(1);
  Tensor out = Tensor::zeros(DType::F32, {n, wa + wb});
  for (int64_t i = 0; i < n; ++i) {
    std::copy(a.f32() + i * wa, a.f32() + (i + 1) * wa, out.f32() + i * (wa + wb));
    std::copy(b.f32() + i * wb, b.f32() + (i + 1) * wb, out.f32() + i * (wa + wb) + wa);
  }
  return out;
}

Tensor pooled_side_by_side(const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::zeros(DType::F32, {a.numel() + b.numel()});
  std::copy(a.f32(), a.f32() + a.numel(), out.f32());
  std::copy(b.f32(), b.f32() + b.numel(), out.f32() + a.numel());
  return out;
}

// SD 1.x and 2.x: the text encoder's last hidden states.
Status sd_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d) {
  ARCH_TRY(NamedTensors a, encode(p, *p.text_encoder, "text_encoder", opt.ids, "prompt", {"last_hidden_state"}));
  r.prompt_embeds = d.context = a.at("last_hidden_state");
  if (!opt.negative_ids.empty() && opt.guidance != 1.0f) {
    ARCH_TRY(NamedTensors n, encode(p, *p.text_encoder, "text_encoder", opt.negative_ids, "negative prompt", {"last_hidden_state"}));
    r.negative_prompt_embeds = d.negative_context = n.at("last_hidden_state");
  }
  return {};
}

// SDXL: both encoders' penultimate hidden states side by side, the
// second's projected pooled row, and the six size ids; an empty negative
// prompt is zeros where the pipeline says so (force_zeros_for_empty_prompt).
Status sdxl_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d) {
  auto both = [&](const std::vector<int32_t>& ids, const std::vector<int32_t>& ids_2, const std::string& what,
                  Tensor& context, Tensor& pooled) -> Status {
    ARCH_TRY(NamedTensors a, encode(p, *p.text_encoder, "text_encoder", ids, what, {"penultimate_hidden_state"}));
    ARCH_TRY(NamedTensors b, encode(p, *p.text_encoder_2, "text_encoder_2", ids_2.empty() ? ids : ids_2, what,
                                    {"penultimate_hidden_state", "text_embeds"}));
    ARCH_TRY(context, side_by_side(a.at("penultimate_hidden_state"), b.at("penultimate_hidden_state"), what));
    pooled = b.at("text_embeds");
    return {};
  };
  ARCH_TRY_STATUS(both(opt.ids, opt.ids_2, "prompt", r.prompt_embeds, r.pooled_prompt_embeds));
  d.context = r.prompt_embeds;
  // The size ids: original size, crop's top-left, target size (the image's).
  const int64_t scale = vae_scale(p), H = opt.latents.dim(-2) * scale, W = opt.latents.dim(-1) * scale;
  r.add_time_ids = Tensor::zeros(DType::F32, {6});
  const int64_t ids6[6] = {opt.original_height ? opt.original_height : H, opt.original_width ? opt.original_width : W,
                           opt.crop_top, opt.crop_left, H, W};
  for (int k = 0; k < 6; ++k) r.add_time_ids.f32()[k] = float(ids6[k]);
  d.extra = {{"text_embeds", r.pooled_prompt_embeds}, {"time_ids", r.add_time_ids}};
  if (opt.guidance == 1.0f) return {};
  if (!opt.negative_ids.empty()) {
    ARCH_TRY_STATUS(both(opt.negative_ids, opt.negative_ids_2, "negative prompt", r.negative_prompt_embeds,
                         r.negative_pooled_prompt_embeds));
  } else if (const auto zeros = p.index.find("force_zeros_for_empty_prompt");
             zeros == p.index.end() || !zeros->is_boolean() || zeros->get<bool>()) {
    r.negative_prompt_embeds = Tensor::zeros(DType::F32, r.prompt_embeds.shape);
    r.negative_pooled_prompt_embeds = Tensor::zeros(DType::F32, r.pooled_prompt_embeds.shape);
  } else {
    return error(p.dir + ": this SDXL pipeline does not zero the empty prompt: give the negative prompt's ids");
  }
  d.negative_context = r.negative_prompt_embeds;
  d.negative_extra = {{"text_embeds", r.negative_pooled_prompt_embeds}, {"time_ids", r.add_time_ids}};
  return {};
}

}  // namespace

Status sd3_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d) {
  const int64_t joint = p.denoiser->config_int("joint_attention_dim", 4096);
  auto one = [&](const std::vector<int32_t>& ids, const std::vector<int32_t>& ids_2, const std::vector<int32_t>& ids_3,
                 const std::string& what, Tensor& context, Tensor& pooled) -> Status {
    const std::vector<std::string> outs = {"penultimate_hidden_state", "text_embeds"};
    ARCH_TRY(NamedTensors a, encode(p, *p.text_encoder, "text_encoder", ids, what, outs));
    ARCH_TRY(NamedTensors b, encode(p, *p.text_encoder_2, "text_encoder_2", ids_2.empty() ? ids : ids_2, what, outs));
    ARCH_TRY(Tensor clip, side_by_side(a.at("penultimate_hidden_state"), b.at("penultimate_hidden_state"), what));
    Tensor t5;
    if (p.text_encoder_3) {
      ARCH_TRY(NamedTensors c, encode(p, *p.text_encoder_3, "text_encoder_3", ids_3, what, {"encoder_last_hidden_state"}));
      t5 = c.at("encoder_last_hidden_state");
    } else {
      if (!ids_3.empty()) return error(p.dir + ": the pipeline has no text_encoder_3 for the " + what + "'s T5 ids");
      t5 = Tensor::zeros(DType::F32, {256, joint});  // diffusers' max_sequence_length of zeros
    }
    context = rows_then(clip, t5);
    pooled = pooled_side_by_side(a.at("text_embeds"), b.at("text_embeds"));
    return {};
  };
  ARCH_TRY_STATUS(one(opt.ids, opt.ids_2, opt.ids_3, "prompt", r.prompt_embeds, r.pooled_prompt_embeds));
  d.context = r.prompt_embeds;
  d.extra["pooled_projections"] = r.pooled_prompt_embeds;
  if (opt.guidance != 1.0f && !opt.negative_ids.empty()) {
    ARCH_TRY_STATUS(one(opt.negative_ids, opt.negative_ids_2, opt.negative_ids_3, "negative prompt", r.negative_prompt_embeds,
                        r.negative_pooled_prompt_embeds));
    d.negative_context = r.negative_prompt_embeds;
    d.negative_extra["pooled_projections"] = r.negative_pooled_prompt_embeds;
  }
  return {};
}

Status flux_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d) {
  if (!opt.negative_ids.empty() || !opt.negative_ids_2.empty())
    return error(p.dir + ": Flux takes the guidance scale as an input (guidance-distilled): it runs no negative prompt");
  if (!opt.ids_3.empty()) return error(p.dir + ": a Flux pipeline has two text encoders: its T5's ids are --ids-2");
  ARCH_TRY(NamedTensors a, encode(p, *p.text_encoder, "text_encoder", opt.ids, "prompt", {"pooler_output"}));
  ARCH_TRY(NamedTensors b, encode(p, *p.text_encoder_2, "text_encoder_2", opt.ids_2, "prompt", {"encoder_last_hidden_state"}));
  r.prompt_embeds = b.at("encoder_last_hidden_state");
  r.pooled_prompt_embeds = a.at("pooler_output");
  d.context = r.prompt_embeds;
  d.extra["pooled_projections"] = r.pooled_prompt_embeds;
  return {};
}

Status wan_conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d) {
  if (!opt.ids_2.empty() || !opt.negative_ids_2.empty() || !opt.ids_3.empty() || !opt.negative_ids_3.empty())
    return error(p.dir + ": a Wan pipeline has one text encoder: its ids are --ids");
  // WanPipeline's max_sequence_length: the encoder runs on the prompt's own
  // tokens (its padding masked out), its states then zero rows to 512.
  constexpr int64_t kRows = 512;
  auto one = [&](const std::vector<int32_t>& ids, const std::string& what) -> Result<Tensor> {
    if (int64_t(ids.size()) > kRows)
      return error("the " + what + " has " + std::to_string(ids.size()) + " tokens; Wan's text encoder takes " + std::to_string(kRows));
    ARCH_TRY(NamedTensors a, encode(p, *p.text_encoder, "text_encoder", ids, what, {"encoder_last_hidden_state"}));
    const Tensor& states = a.at("encoder_last_hidden_state");
    Tensor out = Tensor::zeros(DType::F32, {kRows, states.dim(1)});
    std::copy(states.f32(), states.f32() + states.numel(), out.f32());
    return out;
  };
  ARCH_TRY(r.prompt_embeds, one(opt.ids, "prompt"));
  d.context = r.prompt_embeds;
  if (opt.guidance != 1.0f && !opt.negative_ids.empty()) {
    ARCH_TRY(r.negative_prompt_embeds, one(opt.negative_ids, "negative prompt"));
    d.negative_context = r.negative_prompt_embeds;
  }
  return {};
}

Status conditioning(const Pipeline& p, const ImagineOptions& opt, ImagineResult& r, DenoiseOptions& d) {
  if (p.kind == "WanPipeline") return wan_conditioning(p, opt, r, d);
  if (p.kind == "StableDiffusion3Pipeline") return sd3_conditioning(p, opt, r, d);
  if (p.kind == "FluxPipeline") return flux_conditioning(p, opt, r, d);
  if (p.kind == "StableDiffusionXLPipeline") return sdxl_conditioning(p, opt, r, d);
  return sd_conditioning(p, opt, r, d);
}

}  // namespace arch

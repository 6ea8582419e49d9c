#include "engine/runtime/pipeline_prompts.h"

#include <algorithm>

#include "engine/runtime/forward.h"

namespace arch {

namespace {

// One encoder on a prompt's ids: the outputs asked, the failure named.
Result<NamedTensors> encode(const Pipeline& p, const Model& m, const char* folder, const std::vector<int32_t>& ids,
                            const std::string& what, const std::vector<std::string>& outputs) {
  if (ids.empty()) return error("the " + what + " has no token ids for " + folder);
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
    const Tensor &pa = a.at("text_embeds"), &pb = b.at("text_embeds");
    pooled = Tensor::zeros(DType::F32, {pa.numel() + pb.numel()});
    std::copy(pa.f32(), pa.f32() + pa.numel(), pooled.f32());
    std::copy(pb.f32(), pb.f32() + pb.numel(), pooled.f32() + pa.numel());
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

}  // namespace arch

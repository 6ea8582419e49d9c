#include "engine/runtime/pipeline.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <tuple>

#include "engine/core/json_text.h"
#include "engine/core/limits.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/pipeline_prompts.h"

namespace arch {

namespace fs = std::filesystem;

std::vector<std::pair<std::string, const Model*>> pipeline_components(const Pipeline& p) {
  std::vector<std::pair<std::string, const Model*>> out = {{"text_encoder", p.text_encoder.get()}};
  if (p.text_encoder_2) out.push_back({"text_encoder_2", p.text_encoder_2.get()});
  if (p.text_encoder_3) out.push_back({"text_encoder_3", p.text_encoder_3.get()});
  out.push_back({p.denoiser_folder, p.denoiser.get()});
  if (p.denoiser_2) out.push_back({"transformer_2", p.denoiser_2.get()});
  out.push_back({"vae", p.vae.get()});
  return out;
}

bool is_pipeline(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / "model_index.json", ec);
}

Result<Pipeline> load_pipeline(const std::string& dir, const LoadOptions& opt, const std::string& scheduler) {
  Pipeline p;
  p.dir = dir;
  const fs::path index = fs::path(dir) / "model_index.json";
  std::ifstream in(index);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return error(index.string() + ": cannot read it");
  ARCH_TRY(p.index, parse_json(text.str(), index.string()));
  if (!p.index.is_object()) return error(index.string() + ": not a JSON object");
  p.kind = p.index.value("_class_name", std::string());
  // The image to image and inpainting pipelines of SD and SDXL keep their
  // text to image pipeline's folders and conditioning: run as it, the
  // image and mask given (imagine --init-image --mask). (SDXL's refiner,
  // StableDiffusionXLImg2ImgPipeline, conditions on an aesthetic score: not these.)
  for (auto [variant, base] : {std::pair{"StableDiffusionImg2ImgPipeline", "StableDiffusionPipeline"},
                               std::pair{"StableDiffusionInpaintPipeline", "StableDiffusionPipeline"},
                               std::pair{"StableDiffusionXLInpaintPipeline", "StableDiffusionXLPipeline"}})
    if (p.kind == variant) p.kind = base;
  const bool xl = p.kind == "StableDiffusionXLPipeline", sd3 = p.kind == "StableDiffusion3Pipeline",
             flux = p.kind == "FluxPipeline", wan = p.kind == "WanPipeline";
  if (p.kind != "StableDiffusionPipeline" && !xl && !sd3 && !flux && !wan)
    return error(index.string() + ": pipeline '" + p.kind +
                 "' is not one archrun runs (StableDiffusionPipeline, StableDiffusionXLPipeline, StableDiffusion3Pipeline, "
                 "FluxPipeline, WanPipeline)");
  // A component model_index.json names null is absent (SD3 without its T5).
  auto named = [&](const char* name) {
    const auto it = p.index.find(name);
    return it != p.index.end() && it->is_array() && !it->empty() && !(*it)[0].is_null();
  };
  auto component = [&](const char* name) -> Result<std::shared_ptr<Model>> {
    const fs::path sub = fs::path(dir) / name;
    std::error_code ec;
    if (!fs::is_directory(sub, ec)) return error(dir + ": the pipeline has no " + name + "/ folder");
    auto m = load_model(sub.string(), opt);
    if (!m.ok()) return error(dir + ": " + name + ": " + m.error().message);
    return *m;
  };
  ARCH_TRY(p.text_encoder, component("text_encoder"));
  if (xl || sd3 || flux) {
    ARCH_TRY(p.text_encoder_2, component("text_encoder_2"));
  }
  if (sd3 && named("text_encoder_3")) {
    ARCH_TRY(p.text_encoder_3, component("text_encoder_3"));
  }
  p.denoiser_folder = sd3 || flux || wan ? "transformer" : "unet";
  ARCH_TRY(p.denoiser, component(p.denoiser_folder.c_str()));
  if (wan) {
    // Wan 2.2 A14B: a second expert for the low-noise steps, below
    // boundary_ratio of the schedule. TI2V-5B's expand_timesteps gives each
    // token its own timestep: the step's own for every token from text
    // alone (its mask all ones), so the one timestep is the same sums.
    const auto ratio = p.index.find("boundary_ratio");
    const bool has_ratio = ratio != p.index.end() && !ratio->is_null();
    if (named("transformer_2") != has_ratio)
      return error(index.string() + ": transformer_2 and boundary_ratio go together (Wan 2.2's two experts): " +
                   (has_ratio ? "boundary_ratio without transformer_2" : "transformer_2 without boundary_ratio"));
    if (has_ratio) {
      if (!ratio->is_number() || !(ratio->get<double>() >= 0 && ratio->get<double>() <= 1))
        return error(index.string() + ": boundary_ratio must be a number from 0 to 1, not " + ratio->dump());
      p.boundary_ratio = ratio->get<double>();
      ARCH_TRY(p.denoiser_2, component("transformer_2"));
      if (p.denoiser_2->template_path != p.denoiser->template_path)
        return error(dir + ": transformer_2 (" + p.denoiser_2->template_path + ") is not of transformer's template (" +
                     p.denoiser->template_path + ")");
    }
  }
  ARCH_TRY(p.vae, component("vae"));
  // The components must fit one another.
  const auto& uc = p.denoiser->checkpoint.config;
  const auto& vc = p.vae->checkpoint.config;
  auto field = [](const std::shared_ptr<Model>& m, const char* f) {
    return m ? m->checkpoint.config.value(f, int64_t(0)) : int64_t(0);
  };
  auto unfit = [&](const std::string& what, int64_t have, const std::string& wanted, int64_t want) -> Status {
    if (have == want) return {};
    return error(dir + ": " + what + " (" + std::to_string(have) + ") is not " + wanted + " (" + std::to_string(want) + ")");
  };
  const std::string d = p.denoiser_folder;
  const int64_t latent = vc.value("latent_channels", int64_t(-1));
  if (sd3) {
    // SD3: both CLIPs' penultimate states side by side, padded to the T5's
    // width, then the T5's; their projected pooled rows side by side.
    const int64_t joint = uc.value("joint_attention_dim", int64_t(-1));
    if (p.text_encoder_3) ARCH_TRY_STATUS(unfit("text_encoder_3's d_model", field(p.text_encoder_3, "d_model"), d + "'s joint_attention_dim", joint));
    if (field(p.text_encoder, "hidden_size") + field(p.text_encoder_2, "hidden_size") > joint)
      return error(dir + ": the CLIP encoders' hidden sizes add up past " + d + "'s joint_attention_dim (" + std::to_string(joint) + ")");
    ARCH_TRY_STATUS(unfit("the CLIP encoders' projection_dim", field(p.text_encoder, "projection_dim") + field(p.text_encoder_2, "projection_dim"),
                          d + "'s pooled_projection_dim", uc.value("pooled_projection_dim", int64_t(-1))));
    ARCH_TRY_STATUS(unfit(d + "'s in_channels", uc.value("in_channels", int64_t(-1)), "vae's latent_channels", latent));
  } else if (flux) {
    // Flux: the T5's states are the context, the CLIP's pooled row the
    // pooled projection; the latents packed 2x2.
    ARCH_TRY_STATUS(unfit("text_encoder_2's d_model", field(p.text_encoder_2, "d_model"), d + "'s joint_attention_dim",
                          uc.value("joint_attention_dim", int64_t(-1))));
    ARCH_TRY_STATUS(unfit("text_encoder's hidden_size", field(p.text_encoder, "hidden_size"), d + "'s pooled_projection_dim",
                          uc.value("pooled_projection_dim", int64_t(-1))));
    ARCH_TRY_STATUS(unfit(d + "'s in_channels", uc.value("in_channels", int64_t(-1)), "4 x vae's latent_channels (2x2 patches)", 4 * latent));
  } else if (wan) {
    // Wan: UMT5's states are the context; the latents the VAE's.
    ARCH_TRY_STATUS(unfit("text_encoder's d_model", field(p.text_encoder, "d_model"), d + "'s text_dim",
                          uc.value("text_dim", int64_t(-1))));
    ARCH_TRY_STATUS(unfit(d + "'s in_channels", uc.value("in_channels", int64_t(-1)), "vae's z_dim", vc.value("z_dim", int64_t(-1))));
    if (!makes_video(p)) return error(dir + ": " + d + ": its template takes no video latents [C, F, H, W]");
  } else {
    // The text's width is the UNet's cross-attention width, the UNet's
    // channels the VAE's latent channels.
    const int64_t width = field(p.text_encoder, "hidden_size") + field(p.text_encoder_2, "hidden_size");
    if (uc.value("cross_attention_dim", int64_t(-2)) != width)
      return error(dir + ": the text encoders' hidden_size (" + std::to_string(width) + ") is not unet's cross_attention_dim (" +
                   uc.value("cross_attention_dim", nlohmann::json()).dump() + ")");
    // An inpainting UNet takes the mask and the masked image's latents beside the latents.
    if (uc.value("in_channels", int64_t(-1)) == 2 * latent + 1 && latent > 0) p.conditioning_channels = latent + 1;
    if (uc.value("in_channels", -1) != latent + p.conditioning_channels || uc.value("out_channels", -1) != latent)
      return error(dir + ": unet's in/out channels (" + uc.value("in_channels", nlohmann::json()).dump() + ", " +
                   uc.value("out_channels", nlohmann::json()).dump() + ") are not vae's latent_channels (" +
                   vc.value("latent_channels", nlohmann::json()).dump() + ")");
  }
  // The pipeline's scheduler/ (a component may be a link to a folder elsewhere).
  std::error_code ec;
  const fs::path own = fs::path(dir) / "scheduler";
  ARCH_TRY(nlohmann::json sc, read_scheduler_config((fs::is_directory(own, ec) ? own : fs::path(dir) / d).string(), &p.scheduler_path));
  ARCH_TRY(p.scheduler, make_scheduler(sc, p.scheduler_path, scheduler));
  p.scheduler_train_steps = sc.value("num_train_timesteps", 1000);
  return p;
}

namespace {

// The image a run makes is held as floats three times over (the VAE's
// output, the image, the PNG's bytes): its size is bounded as an image to
// decode is, before the loop starts.
Status check_image_pixels(int64_t height, int64_t width) {
  return check_limit("image_pixels", saturating_product({height, width}),
                     "an image of " + std::to_string(height) + "x" + std::to_string(width), "its pixels");
}

}  // namespace

int64_t vae_scale(const Pipeline& p) {
  if (const int64_t s = p.vae->config_int("scale_factor_spatial", 0); s > 0) return s;
  const auto& boc = p.vae->checkpoint.config.value("block_out_channels", nlohmann::json::array());
  return int64_t(1) << std::max<int64_t>(0, int64_t(boc.size()) - 1);
}

int64_t vae_temporal_scale(const Pipeline& p) { return std::max<int64_t>(0, p.vae->config_int("scale_factor_temporal", 0)); }

namespace {

// The graph that takes the loop's latents and the input it takes them as:
// a pack graph's latents (Flux, Wan), else the denoise graph's sample
// (UNet) or hidden_states (SD3).
Result<std::pair<const ModelGraph*, int>> latents_input(const Pipeline& p) {
  auto pack = p.denoiser->find_graph("pack");
  ARCH_TRY(const ModelGraph* g, pack.ok() ? pack : p.denoiser->find_graph("denoise"));
  int v = g->graph.find_input(pack.ok() ? "latents" : "sample");
  if (v < 0 && !pack.ok()) v = g->graph.find_input("hidden_states");
  if (v < 0)
    return error(p.dir + ": " + p.denoiser_folder + ": its graph takes no latents (sample, hidden_states, or a pack graph's latents)");
  return std::pair{g, v};
}

}  // namespace

bool makes_video(const Pipeline& p) {
  auto in = latents_input(p);
  return in.ok() && in->first->graph.values[size_t(in->second)].type.shape.size() == 4;
}

Result<Dims> latent_shape(const Pipeline& p, int64_t height, int64_t width, int64_t frames) {
  // The latents as the loop holds them: what a pack graph packs (Flux), else
  // the denoise graph's sample (UNet) or hidden_states (SD3).
  const std::string& d = p.denoiser_folder;
  ARCH_TRY(auto in, latents_input(p));
  const bool pack = in.first->name() == "pack";
  const Shape& want = in.first->graph.values[size_t(in.second)].type.shape;
  const bool video = want.size() == 4;
  if ((want.size() != 3 && !video) || !want[0].concrete()) return error(p.dir + ": " + d + ": its latents are not [C, H, W] or [C, F, H, W]");
  if (!video && frames) return error(p.dir + ": this pipeline makes images, not videos: --frames is a video pipeline's");
  // Packed latents are cut into 2x2 patches.
  const int64_t scale = vae_scale(p), step = pack ? 2 * scale : scale;
  const int64_t fallback = p.denoiser->config_int("sample_size", pack ? 128 : 64) * scale;
  Dims shape = {want[0].n - p.conditioning_channels};
  if (video) {
    // WanPipeline's defaults: 81 frames of 480 x 832.
    const int64_t per = vae_temporal_scale(p), f = frames ? frames : 81;
    if (per < 1) return error(p.dir + ": vae: its template gives no temporal scale (scale_factor_temporal) for a video");
    if (f < 1 || (f - 1) % per != 0)
      return error("a video's frames must be one more than a multiple of " + std::to_string(per) + " (the VAE's temporal scale): " +
                   std::to_string(f) + " is not; " + std::to_string((f - 1) / per * per + 1) + " or " +
                   std::to_string(((f - 1) / per + 1) * per + 1) + " would be");
    shape.push_back((f - 1) / per + 1);
    if (!height) height = 480;
    if (!width) width = 832;
  }
  for (auto [dim, pixels, what] : {std::tuple{want[want.size() - 2], height, "height"}, std::tuple{want.back(), width, "width"}}) {
    const int64_t px = pixels ? pixels : dim.concrete() ? dim.n * scale : fallback;
    if (px % step != 0 || px < step)
      return error(std::string(video ? "the video's " : "the image's ") + what + " must be a positive multiple of " + std::to_string(step) +
                   (step == scale ? " (the VAE's scale)" : " (twice the VAE's scale: latents packed in 2x2 patches)") +
                   ", not " + std::to_string(px));
    if (dim.concrete() && dim.n * scale != px)
      return error(p.dir + ": this pipeline's " + d + " makes images of " + std::to_string(dim.n * scale) + " pixels' " + what +
                   " only, not " + std::to_string(px));
    shape.push_back(px / scale);
  }
  const int64_t h = shape[shape.size() - 2] * scale, w = shape.back() * scale;
  if (video)
    ARCH_TRY_STATUS(check_limit("image_pixels", saturating_product({(shape[1] - 1) * vae_temporal_scale(p) + 1, h, w}),
                                "a video of " + std::to_string(frames ? frames : 81) + " frames of " + std::to_string(h) + "x" +
                                    std::to_string(w),
                                "its pixels"));
  else
    ARCH_TRY_STATUS(check_image_pixels(h, w));
  return shape;
}

Result<ImagineResult> imagine(Pipeline& p, const ImagineOptions& opt) {
  using clock = std::chrono::steady_clock;
  auto since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
  const Dims& z = opt.latents.shape;
  if (z.size() >= 2) {
    const int64_t scale = vae_scale(p);
    ARCH_TRY_STATUS(check_image_pixels(saturating_product({z[z.size() - 2], scale}), saturating_product({z.back(), scale})));
  }
  ARCH_TRY_STATUS(check_guidance(opt.guidance));
  if (opt.guidance_2 >= 0 && !p.denoiser_2) return error(p.dir + ": a second guidance scale is for a second (low-noise) transformer; this pipeline has one");
  if (makes_video(p) && (opt.init_image.data || opt.mask.data))
    return error(p.dir + ": a video pipeline starts from text alone here (no --init-image or --mask)");
  if (p.conditioning_channels && !(opt.init_image.data && opt.mask.data))
    return error(p.dir + ": an inpainting UNet (in_channels " + std::to_string(p.denoiser->config_int("in_channels", 0)) +
                 ") makes an image from one to start from and a mask: give both (--init-image, --mask)");
  ImagineResult r;
  auto t = clock::now();
  DenoiseOptions d;
  d.steps = opt.steps;
  d.guidance = opt.guidance;
  d.on_step = opt.on_step;
  d.noise_seed = opt.noise_seed;
  if (p.denoiser_2) {
    d.low_noise = p.denoiser_2.get();
    d.boundary_timestep = float(p.boundary_ratio * double(p.scheduler_train_steps));
    d.guidance_2 = opt.guidance_2 >= 0 ? opt.guidance_2 : opt.guidance;
  }
  ARCH_TRY_STATUS(conditioning(p, opt, r, d));
  r.text_seconds = since(t);
  t = clock::now();
  if (opt.init_image.data) {
    ARCH_TRY(r.image_latents, image_latents(p, opt.init_image, opt.noise_seed + 1));
    d.image_latents = r.image_latents;
    d.strength = opt.strength;
  }
  if (opt.mask.data) {
    if (!opt.init_image.data) return error("a mask needs the image it keeps (--init-image)");
    ARCH_TRY(r.mask_latents, latent_mask(opt.mask, r.image_latents.dim(-2), r.image_latents.dim(-1)));
    if (p.conditioning_channels) {
      ARCH_TRY(d.conditioning, inpainting_conditioning(p, opt.init_image, opt.mask, r.mask_latents, opt.noise_seed + 2));
      r.masked_image_latents = d.conditioning;
    } else {
      d.mask = r.mask_latents;
    }
  }
  ARCH_TRY(r.denoised, denoise(*p.denoiser, *p.scheduler, opt.latents, d));
  r.loop_seconds = since(t);
  t = clock::now();
  auto out = forward(*p.vae, {{"latents", r.denoised.latents}}, {"decode_input", "decoded_sample"}, nullptr, "decode");
  if (!out.ok()) return error(p.dir + ": vae: " + out.error().message);
  r.decode_input = out->at("decode_input");
  r.image_decoded = out->at("decoded_sample");
  r.decode_seconds = since(t);
  // diffusers' postprocess: (x / 2 + 0.5) held to [0, 1]
  r.image = Tensor::zeros(DType::F32, r.image_decoded.shape);
  for (int64_t i = 0; i < r.image.numel(); ++i)
    r.image.f32()[i] = std::clamp(r.image_decoded.f32()[i] / 2.0f + 0.5f, 0.0f, 1.0f);
  return r;
}

namespace {

// The pad token tokenizer_config.json names beside a tokenizer, where the
// tokenizer has it.
std::optional<int32_t> configured_pad(const Tokenizer& tok, const std::string& tok_dir) {
  std::ifstream in(tok_dir + "/tokenizer_config.json");
  if (!in) return std::nullopt;
  std::stringstream body;
  body << in.rdbuf();
  auto cfg = parse_json(body.str(), tok_dir);
  if (!cfg.ok() || !cfg->is_object() || !cfg->contains("pad_token")) return std::nullopt;
  const auto& t = (*cfg)["pad_token"];
  const std::string name = t.is_string() ? t.get<std::string>() : t.is_object() ? t.value("content", std::string()) : "";
  return tok.token_to_id(name);
}

// A prompt's ids cut to `length` (the last then `eos`), padded with `pad`.
std::vector<int32_t> fitted(std::vector<int32_t> ids, int64_t length, int32_t eos, int32_t pad) {
  if (int64_t(ids.size()) > length) {
    ids.resize(size_t(length));
    ids.back() = eos;
  }
  ids.resize(size_t(length), pad);
  return ids;
}

}  // namespace

std::vector<int32_t> t5_prompt_ids(const Tokenizer& tok, const std::string& tok_dir, const std::string& text,
                                   int64_t length, bool pad) {
  const int32_t eos = tok.eos_id() ? *tok.eos_id() : tok.token_to_id("</s>").value_or(1);
  const int32_t pad_id = configured_pad(tok, tok_dir).value_or(tok.token_to_id("<pad>").value_or(0));
  std::vector<int32_t> ids = tok.encode(text, true);
  if (ids.empty() || ids.back() != eos) ids.push_back(eos);
  return fitted(std::move(ids), pad ? length : std::min<int64_t>(length, int64_t(ids.size())), eos, pad_id);
}

std::vector<int32_t> pipeline_prompt_ids(const Pipeline& p, const Tokenizer& tok, const std::string& tok_dir,
                                         const std::string& text) {
  const int32_t eos = tok.eos_id() ? *tok.eos_id() : tok.token_to_id("<|endoftext|>").value_or(0);
  return fitted(tok.encode(text, true), p.text_encoder->config_int("max_position_embeddings", 77), eos,
                configured_pad(tok, tok_dir).value_or(eos));
}

Result<Tensor> image_latents(const Pipeline& p, const Tensor& image, uint64_t seed) {
  if (image.dtype != DType::F32 || image.shape.size() != 3 || image.shape[0] != 3)
    return error("the image to start from is " + dims_str(image.shape) + ", not [3, H, W]");
  const int64_t scale = vae_scale(p);
  if (image.dim(1) % scale || image.dim(2) % scale)
    return error("the image to start from is " + std::to_string(image.dim(2)) + "x" + std::to_string(image.dim(1)) +
                 ": its sides must be multiples of " + std::to_string(scale) + " (the VAE's scale)");
  // diffusers' VaeImageProcessor: [0, 1] to [-1, 1].
  Tensor x = Tensor::zeros(DType::F32, image.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = image.f32()[i];
    if (!std::isfinite(v)) return error("the image to start from holds a value that is not a number, at element " + std::to_string(i));
    x.f32()[i] = v * 2.0f - 1.0f;
  }
  auto out = forward(*p.vae, {{"image", x}}, {"latent_mean_scaled", "latent_std_scaled"}, nullptr, "encode");
  if (!out.ok()) return error(p.dir + ": vae, encoding the image: " + out.error().message);
  // A sample of the posterior (retrieve_latents' "sample"), shifted and
  // scaled as the decoder undoes it (the template's outputs).
  const Tensor &mean = out->at("latent_mean_scaled"), &stdev = out->at("latent_std_scaled");
  const Tensor eps = seeded_latents(mean.shape, seed);
  Tensor z = Tensor::zeros(DType::F32, mean.shape);
  for (int64_t i = 0; i < z.numel(); ++i) z.f32()[i] = mean.f32()[i] + stdev.f32()[i] * eps.f32()[i];
  return z;
}

Result<Tensor> inpainting_conditioning(const Pipeline& p, const Tensor& image, const Tensor& mask, const Tensor& mask_latents,
                                       uint64_t seed) {
  if (mask.dtype != DType::F32 || image.shape.size() != 3 || mask.numel() != image.dim(1) * image.dim(2))
    return error("the mask is " + dims_str(mask.shape) + ", the image " + dims_str(image.shape) + ": one value per pixel");
  // diffusers: image * (mask < 0.5) in [-1, 1], so 0.5 in [0, 1] where the mask is white.
  Tensor masked = Tensor::zeros(DType::F32, image.shape);
  const int64_t plane = mask.numel();
  for (int64_t i = 0; i < masked.numel(); ++i) masked.f32()[i] = mask.f32()[i % plane] < 0.5f ? image.f32()[i] : 0.5f;
  ARCH_TRY(Tensor latents, image_latents(p, masked, seed));
  latents = latents.reshaped({latents.numel() / mask_latents.numel(), mask_latents.dim(-2), mask_latents.dim(-1)});
  Tensor out = Tensor::zeros(DType::F32, {1 + latents.dim(0), latents.dim(1), latents.dim(2)});
  std::memcpy(out.f32(), mask_latents.f32(), size_t(mask_latents.numel()) * sizeof(float));
  std::memcpy(out.f32() + mask_latents.numel(), latents.f32(), latents.nbytes());
  return out;
}

Result<Tensor> latent_mask(const Tensor& mask, int64_t height, int64_t width) {
  if (mask.dtype != DType::F32 || mask.numel() == 0 || mask.shape.size() < 2)
    return error("the mask is " + dims_str(mask.shape) + ", not [1, H, W]");
  const int64_t H = mask.dim(-2), W = mask.dim(-1);
  if (mask.numel() != H * W) return error("the mask is " + dims_str(mask.shape) + ": one channel, [1, H, W]");
  // Binarised at 0.5, then torch's nearest interpolation to the latents'
  // size (source index floor(i x H / h)).
  Tensor out = Tensor::zeros(DType::F32, {1, height, width});
  for (int64_t i = 0; i < height; ++i)
    for (int64_t j = 0; j < width; ++j) {
      const int64_t si = std::min(H - 1, int64_t(double(i) * double(H) / double(height)));
      const int64_t sj = std::min(W - 1, int64_t(double(j) * double(W) / double(width)));
      out.f32()[i * width + j] = mask.f32()[si * W + sj] >= 0.5f ? 1.0f : 0.0f;
    }
  return out;
}

uint64_t noise_seed_of(uint64_t seed) { return seed ^ 0x9e3779b97f4a7c15ull; }

Tensor seeded_latents(const Dims& shape, uint64_t seed) {
  Tensor t = Tensor::zeros(DType::F32, shape);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng);
  return t;
}

}  // namespace arch

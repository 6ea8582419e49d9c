// archrun imagine: text (as token ids) to a PNG through a Stable Diffusion
// pipeline folder: embeddings, the sampling loop with guidance, the VAE; or
// to a video (WebM, an animated GIF, or a PNG a frame) through a Wan
// pipeline.
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/output_file.h"
#include "importer/checkpoint/safetensors.h"
#include "importer/image/image.h"
#include "importer/image/image_resample.h"
#include "importer/image/image_write.h"
#include "importer/image/video_write.h"
#include "engine/runtime/pipeline.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// WanPipeline's whitespace_clean: each run of whitespace one space, none at the ends.
std::string collapse_whitespace(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

int run_imagine(const ImagineArgs& a) {
  if (a.steps < 1) return fail(error("--steps must be at least 1, not " + std::to_string(a.steps)));
  if (a.out.empty()) return fail(error("give the PNG to write as -o OUT.png"));
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the prompt as -p TEXT or as --ids 49406,...,49407 (one of them)"));
  if (!is_pipeline(a.common.model)) return fail(error(a.common.model + ": not a pipeline folder (no model_index.json)"));
  if (a.height < 0 || a.width < 0 || a.frames < 0)
    return fail(error("--height, --width and --frames must be positive, not " + std::to_string(a.height) + "x" + std::to_string(a.width) +
                      ", " + std::to_string(a.frames)));
  if (!std::isnan(a.guidance))
    if (Status st = check_guidance(a.guidance, "--guidance"); !st.ok()) return fail(st.error());
  // A video is WebM (VP9), an animated GIF or a PNG a frame (NAME_000.png, ...).
  const bool gif = a.out.ends_with(".gif"), webm = a.out.ends_with(".webm");
  const double fps = std::isnan(a.fps) ? 16.0 : a.fps;
  if (!std::isnan(a.fps) && !gif && !webm) return fail(error("--fps is a WebM's or a GIF's; -o " + a.out + " writes neither"));
  if ((gif || webm) && !(fps > 0 && fps <= (gif ? 100 : 1000)))
    return fail(error("--fps must be above 0 and at most " + std::string(gif ? "100 for a GIF" : "1000") + ", not " + std::to_string(fps)));
  // The output must be writable before any work starts (no file is made
  // until the image is whole; "-" and a device are written in place).
  if (Status st = OutputFile::check(a.out); !st.ok()) return fail(st.error());
  auto p = open_pipeline(a.common, a.scheduler);
  if (!p.ok()) return fail(p.error());
  const bool video = makes_video(*p), png_frames = video && a.out.ends_with(".png");
  if (video && !gif && !webm && !png_frames)
    return fail(error(a.common.model + " makes videos: write one as -o NAME.webm (VP9), NAME.gif (animated) or NAME.png (a PNG a frame), not " +
                      a.out));
  if (!video && (gif || webm || a.frames))
    return fail(error(a.common.model + " makes images (a PNG): " + (a.frames ? "--frames is" : "a video file is") + " a video pipeline's"));
  if (png_frames)
    if (Status st = OutputFile::check(frame_paths(a.out, 1)[0]); !st.ok()) return fail(st.error());
  ImagineOptions opt;
  opt.steps = a.steps;
  // diffusers' defaults: StableDiffusionPipeline's 7.5, WanPipeline's 5.
  opt.guidance = std::isnan(a.guidance) ? (video ? 5.0f : 7.5f) : a.guidance;
  opt.guidance_2 = a.guidance_2;
  const bool xl = p->kind == "StableDiffusionXLPipeline", sd3 = p->kind == "StableDiffusion3Pipeline",
             flux = p->kind == "FluxPipeline", wan = p->kind == "WanPipeline";
  if (!xl && (!a.original_size.empty() || !a.crop_top_left.empty()))
    return fail(error("--original-size and --crop-top-left are SDXL's; " + a.common.model + " is not an SDXL pipeline"));
  if (!xl && !sd3 && !flux && (!a.ids_2.empty() || !a.negative_ids_2.empty()))
    return fail(error("--ids-2 and --negative-ids-2 are for a second text encoder (SDXL, SD3, Flux); " + a.common.model +
                      " has one"));
  if (!sd3 && (!a.ids_3.empty() || !a.negative_ids_3.empty()))
    return fail(error("--ids-3 and --negative-ids-3 are SD3's T5's; " + a.common.model + " is not an SD3 pipeline"));
  if (flux && (!a.negative_prompt.empty() || !a.negative_ids.empty() || !a.negative_ids_2.empty()))
    return fail(error(a.common.model + ": Flux takes the guidance scale as an input (guidance-distilled): it runs no negative prompt"));
  if (!a.prompt.empty() && (!a.ids_2.empty() || !a.negative_ids_2.empty() || !a.ids_3.empty() || !a.negative_ids_3.empty()))
    return fail(error("-p tokenizes for every encoder: --ids-2, --ids-3 and their negatives go with --ids"));
  if (!a.negative_ids_2.empty() && a.negative_ids.empty())
    return fail(error("--negative-ids-2 is the second encoder's half of a negative prompt: give --negative-ids too"));
  // H,W and Y,X: two non-negative integers.
  auto pair = [](const std::string& text, const char* what, int64_t& first, int64_t& second) -> Status {
    if (text.empty()) return {};
    auto v = parse_ids(text);
    if (!v.ok() || v->size() != 2) return error(std::string(what) + " must be two integers, as 48,40, not '" + text + "'");
    first = (*v)[0], second = (*v)[1];
    return {};
  };
  if (Status st = pair(a.original_size, "--original-size", opt.original_height, opt.original_width); !st.ok()) return fail(st.error());
  if (Status st = pair(a.crop_top_left, "--crop-top-left", opt.crop_top, opt.crop_left); !st.ok()) return fail(st.error());
  if (!a.prompt.empty()) {
    // The negative prompt "" (bos, eos) where guidance is asked for and none
    // is given; SDXL's empty negative prompt is zeros instead.
    // CLIP's ids padded to its positions; a T5's to the pipeline's
    // max_sequence_length (SD3 256, Flux 512), ended by </s>.
    // Wan's UMT5 takes the prompt's own tokens (the pipeline masks the
    // padding out), its text first cleaned of runs of whitespace.
    auto ids_of = [&](const char* folder, const std::string& text, int64_t t5_length = 0) -> Result<std::vector<int32_t>> {
      const std::string tdir = a.common.model + "/" + folder;
      auto tok = open_tokenizer(tdir);
      if (!tok.ok()) return error(a.common.model + ": -p needs the pipeline's " + folder + "/: " + tok.error().message);
      if (wan) return t5_prompt_ids(**tok, tdir, collapse_whitespace(text), t5_length, false);
      if (t5_length) return t5_prompt_ids(**tok, tdir, text, t5_length);
      return pipeline_prompt_ids(*p, **tok, tdir, text);
    };
    // Each encoder's tokenizer folder, and the T5's length where it is one.
    std::vector<std::tuple<const char*, std::vector<int32_t>*, std::vector<int32_t>*, int64_t>> encoders = {
        {"tokenizer", &opt.ids, &opt.negative_ids, wan ? 512 : 0}};
    if (xl || sd3) encoders.push_back({"tokenizer_2", &opt.ids_2, &opt.negative_ids_2, 0});
    if (flux) encoders.push_back({"tokenizer_2", &opt.ids_2, &opt.negative_ids_2, 512});
    if (sd3 && p->text_encoder_3) encoders.push_back({"tokenizer_3", &opt.ids_3, &opt.negative_ids_3, 256});
    // The negative prompt "" where guidance is asked for and none is given
    // (SDXL's empty one is zeros instead; Flux runs none).
    const bool negative = opt.guidance != 1.0f && !flux && (!xl || !a.negative_prompt.empty());
    for (auto [folder, ids, negative_ids, t5_length] : encoders) {
      auto v = ids_of(folder, a.prompt, t5_length);
      if (!v.ok()) return fail(v.error());
      *ids = *v;
      if (negative) {
        auto n = ids_of(folder, a.negative_prompt, t5_length);
        if (!n.ok()) return fail(n.error());
        *negative_ids = *n;
      }
    }
  } else {
    for (auto [text, into] : {std::pair{&a.ids_2, &opt.ids_2}, std::pair{&a.negative_ids_2, &opt.negative_ids_2},
                              std::pair{&a.ids_3, &opt.ids_3}, std::pair{&a.negative_ids_3, &opt.negative_ids_3}}) {
      if (text->empty()) continue;
      auto v = parse_ids(*text);
      if (!v.ok()) return fail(v.error());
      *into = *v;
    }
    auto ids = parse_ids(a.ids);
    if (!ids.ok()) return fail(ids.error());
    opt.ids = *ids;
    if (!a.negative_ids.empty()) {
      auto n = parse_ids(a.negative_ids);
      if (!n.ok()) return fail(n.error());
      opt.negative_ids = *n;
    }
  }
  opt.noise_seed = noise_seed_of(a.seed);
  // Image to image: the image at the output's size (its own, down to the
  // VAE's scale, where --height/--width do not say), resized as diffusers'
  // VaeImageProcessor resizes (Pillow's Lanczos); the mask likewise, as
  // gray (Pillow's L).
  int64_t height = a.height, width = a.width;
  if (a.init_image.empty() && (!a.mask.empty() || a.strength >= 0))
    return fail(error("--mask and --strength go with --init-image, the image they start from"));
  if (!a.init_image.empty()) {
    if (a.strength >= 0 && !(a.strength > 0 && a.strength <= 1))
      return fail(error("--strength must be above 0 and at most 1, not " + std::to_string(a.strength)));
    opt.strength = a.strength >= 0 ? a.strength : a.mask.empty() ? 0.8f : 1.0f;
    auto img = load_image(a.init_image);
    if (!img.ok()) return fail(img.error());
    const int64_t scale = vae_scale(*p);
    if (!height) height = img->dim(1) / scale * scale;
    if (!width) width = img->dim(2) / scale * scale;
    if (height < scale || width < scale)
      return fail(error(a.init_image + ": " + std::to_string(img->dim(2)) + "x" + std::to_string(img->dim(1)) +
                        " is smaller than the VAE's scale (" + std::to_string(scale) + ")"));
    if (auto sized = latent_shape(*p, height, width); !sized.ok()) return fail(sized.error());  // bounded before resizing
    auto at_size = [&](const Tensor& t) {
      return t.dim(1) == height && t.dim(2) == width ? t : resize_image(t, int(height), int(width), "lanczos");
    };
    Tensor rgb = at_size(*img);
    for (int64_t i = 0; i < rgb.numel(); ++i) rgb.f32()[i] /= 255.0f;
    opt.init_image = rgb;
    if (!a.mask.empty()) {
      auto m = load_image(a.mask);
      if (!m.ok()) return fail(m.error());
      const int64_t plane = m->dim(1) * m->dim(2);
      Tensor gray = Tensor::zeros(DType::F32, {1, m->dim(1), m->dim(2)});
      for (int64_t i = 0; i < plane; ++i)  // ITU-R 601-2 luma, in integers as Pillow's convert("L")
        gray.f32()[i] = float((int64_t(m->f32()[i]) * 299 + int64_t(m->f32()[plane + i]) * 587 +
                               int64_t(m->f32()[2 * plane + i]) * 114) / 1000);
      Tensor sized = at_size(gray);
      for (int64_t i = 0; i < sized.numel(); ++i) sized.f32()[i] /= 255.0f;
      opt.mask = sized;
    }
  }
  // Sizes from the command line bounded before anything of theirs is made.
  auto shape = latent_shape(*p, height, width, a.frames);
  if (!shape.ok()) return fail(shape.error());
  if (!a.latents.empty()) {
    auto l = only_tensor(a.latents, "the latents");
    if (!l.ok()) return fail(l.error());
    opt.latents = *l;
  } else {
    if (Status st = check_loop_size(*shape, a.steps); !st.ok()) return fail(st.error());
    opt.latents = seeded_latents(*shape, a.seed);
    std::fprintf(stderr, "seed %llu\n", (unsigned long long)a.seed);
  }
  opt.on_step = [&](int k, int n) {
    if (!isatty(2)) return;
    const int width = 30, done = width * k / n;
    std::fprintf(stderr, "\r\033[Kimagine [%s%s] step %d/%d", std::string(size_t(done), '#').c_str(),
                 std::string(size_t(width - done), '.').c_str(), k, n);
    if (k == n) std::fprintf(stderr, "\n");
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto r = imagine(*p, opt);
  if (!r.ok()) return fail(r.error());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Status st = !video ? write_png(a.out, r->image)
               : webm ? write_webm(a.out, r->image, fps)
               : gif  ? write_gif(a.out, r->image, fps)
                      : write_png_frames(a.out, r->image);
  if (!st.ok()) return fail(st.error());
  if (!a.save_tensors.empty()) {
    std::vector<std::pair<std::string, Tensor>> t = {{"prompt_embeds", r->prompt_embeds}, {"latents", r->denoised.trajectory},
                                                     {"noise_pred", r->denoised.noise_preds}, {"decode_input", r->decode_input},
                                                     {"image_decoded", r->image_decoded}, {"image", r->image}};
    if (r->image_latents.data) t.push_back({"image_latents", r->image_latents});
    if (r->mask_latents.data) t.push_back({"mask_latents", r->mask_latents});
    if (r->masked_image_latents.data) t.push_back({"masked_image_latents", r->masked_image_latents});
    if (r->negative_prompt_embeds.data) t.insert(t.begin() + 1, {"negative_prompt_embeds", r->negative_prompt_embeds});
    Status s2 = write_safetensors(a.save_tensors, t);
    if (!s2.ok()) return fail(s2.error());
  }
  const std::string frames = video ? std::to_string(r->image.dim(1)) + " frames of " : "";
  const std::string wrote = png_frames ? frame_paths(a.out, r->image.dim(1)).front() + " .. " + frame_paths(a.out, r->image.dim(1)).back()
                                       : OutputFile::shown(a.out);
  std::fprintf(stderr, "%s: %d steps%s (%s%s), %s%lldx%lld, in %.2f s; wrote %s\n", a.common.model.c_str(), int(r->denoised.timesteps.size()),
               a.init_image.empty() ? "" : (" of " + std::to_string(a.steps) + " from " + a.init_image + (a.mask.empty() ? "" : " inpainted by " + a.mask)).c_str(),
               p->scheduler_path.c_str(), a.scheduler.empty() ? "" : (", sampled by " + a.scheduler).c_str(), frames.c_str(),
               (long long)r->image.dim(-2), (long long)r->image.dim(-1), seconds, wrote.c_str());
  return 0;
}

}  // namespace arch::cli

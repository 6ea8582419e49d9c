// archrun imagine: text (as token ids) to a PNG through a Stable Diffusion
// pipeline folder: embeddings, the sampling loop with guidance, the VAE.
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "engine/core/output_file.h"
#include "importer/checkpoint/safetensors.h"
#include "importer/image/image_write.h"
#include "engine/runtime/pipeline.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_imagine(const ImagineArgs& a) {
  if (a.steps < 1) return fail(error("--steps must be at least 1, not " + std::to_string(a.steps)));
  if (a.out.empty()) return fail(error("give the PNG to write as -o OUT.png"));
  if (a.prompt.empty() == a.ids.empty()) return fail(error("give the prompt as -p TEXT or as --ids 49406,...,49407 (one of them)"));
  if (!is_pipeline(a.common.model)) return fail(error(a.common.model + ": not a pipeline folder (no model_index.json)"));
  if (a.height < 0 || a.width < 0)
    return fail(error("--height and --width must be positive, not " + std::to_string(a.height) + "x" + std::to_string(a.width)));
  if (Status st = check_guidance(a.guidance, "--guidance"); !st.ok()) return fail(st.error());
  // The output must be writable before any work starts (no file is made
  // until the image is whole; "-" and a device are written in place).
  if (Status st = OutputFile::check(a.out); !st.ok()) return fail(st.error());
  auto p = open_pipeline(a.common, a.scheduler);
  if (!p.ok()) return fail(p.error());
  ImagineOptions opt;
  opt.steps = a.steps;
  opt.guidance = a.guidance;
  if (!a.prompt.empty()) {
    // The negative prompt "" (bos, eos) where guidance is asked for and none is given.
    const std::string tdir = a.common.model + "/tokenizer";
    auto tok = open_tokenizer(tdir);
    if (!tok.ok()) return fail(error(a.common.model + ": -p needs the pipeline's tokenizer/: " + tok.error().message));
    opt.ids = pipeline_prompt_ids(*p, **tok, tdir, a.prompt);
    if (a.guidance != 1.0f) opt.negative_ids = pipeline_prompt_ids(*p, **tok, tdir, a.negative_prompt);
  } else {
    auto ids = parse_ids(a.ids);
    if (!ids.ok()) return fail(ids.error());
    opt.ids = *ids;
    if (!a.negative_ids.empty()) {
      auto n = parse_ids(a.negative_ids);
      if (!n.ok()) return fail(n.error());
      opt.negative_ids = *n;
    }
  }
  // Sizes from the command line bounded before anything of theirs is made.
  auto shape = latent_shape(*p, a.height, a.width);
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
  Status st = write_png(a.out, r->image);
  if (!st.ok()) return fail(st.error());
  if (!a.save_tensors.empty()) {
    std::vector<std::pair<std::string, Tensor>> t = {{"prompt_embeds", r->prompt_embeds}, {"latents", r->denoised.trajectory},
                                                     {"noise_pred", r->denoised.noise_preds}, {"decode_input", r->decode_input},
                                                     {"image_decoded", r->image_decoded}, {"image", r->image}};
    if (r->negative_prompt_embeds.data) t.insert(t.begin() + 1, {"negative_prompt_embeds", r->negative_prompt_embeds});
    Status s2 = write_safetensors(a.save_tensors, t);
    if (!s2.ok()) return fail(s2.error());
  }
  std::fprintf(stderr, "%s: %d steps (%s%s), %lldx%lld, in %.2f s; wrote %s\n", a.common.model.c_str(), a.steps,
               p->scheduler_path.c_str(), a.scheduler.empty() ? "" : (", sampled by " + a.scheduler).c_str(), (long long)r->image.shape[1], (long long)r->image.shape[2], seconds, OutputFile::shown(a.out).c_str());
  return 0;
}

}  // namespace arch::cli

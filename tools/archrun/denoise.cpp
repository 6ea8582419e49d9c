// archrun denoise: a diffusion denoiser's sampling loop from given (or
// seeded) latents and a context, as the checkpoint's scheduler config says.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include <unistd.h>

#include "engine/core/output_file.h"
#include "importer/checkpoint/safetensors.h"
#include "engine/runtime/denoise.h"
#include "engine/runtime/pipeline.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

int run_denoise(const DenoiseArgs& a) {
  if (a.steps < 1) return fail(error("--steps must be at least 1, not " + std::to_string(a.steps)));
  if (a.context.empty()) return fail(error("give the context (encoder_hidden_states) as --context FILE.safetensors"));
  if (Status st = OutputFile::check(a.out); !st.ok()) return fail(st.error());  // before the work, not after
  if (!std::isnan(a.guidance))
    if (Status st = check_guidance(a.guidance, "--guidance"); !st.ok()) return fail(st.error());
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  std::string config_path;
  auto sc = read_scheduler_config(a.scheduler_config.empty() ? (*m)->checkpoint.dir : a.scheduler_config, &config_path);
  if (!sc.ok()) return fail(sc.error());
  auto scheduler = make_scheduler(*sc, config_path, a.scheduler);
  if (!scheduler.ok()) return fail(scheduler.error());
  DenoiseOptions opt;
  opt.steps = a.steps;
  // Unset: diffusers' pipelines' defaults (7.5 with a negative context;
  // 3.5 as a guidance-distilled model's input, FluxPipeline's).
  auto denoise_graph = (*m)->find_graph("denoise");
  if (!denoise_graph.ok()) return fail(denoise_graph.error());
  const bool distilled = (*denoise_graph)->graph.find_input("guidance") >= 0;
  opt.guidance = std::isnan(a.guidance) ? (distilled ? 3.5f : 7.5f) : a.guidance;
  auto ctx = only_tensor(a.context, "the context");
  if (!ctx.ok()) return fail(ctx.error());
  opt.context = *ctx;
  if (!a.negative_context.empty()) {
    auto n = only_tensor(a.negative_context, "the negative context");
    if (!n.ok()) return fail(n.error());
    opt.negative_context = *n;
  }
  Tensor latents;
  if (!a.latents.empty()) {
    auto l = only_tensor(a.latents, "the latents");
    if (!l.ok()) return fail(l.error());
    latents = *l;
  } else {
    // Seeded standard normal noise of the shape the loop holds: the pack
    // graph's latents (Flux), else the denoise graph's.
    auto g = (*m)->find_graph("pack");
    if (!g.ok()) g = (*m)->find_graph("denoise");
    if (!g.ok()) return fail(g.error());
    const Graph& dg = (*g)->graph;
    int in = dg.find_input("latents");
    if (in < 0) in = dg.find_input("sample");
    if (in < 0) in = dg.find_input("hidden_states");
    if (in < 0) return fail(error((*m)->template_path + ": its " + (*g)->name() + " graph takes no latents"));
    const Value& want = dg.values[size_t(in)];
    // [C, H, W]: a run-time H or W from --latent-height / --latent-width.
    Dims shape;
    for (size_t i = 0; i < want.type.shape.size(); ++i) {
      const Dim& d = want.type.shape[i];
      const int given = i + 2 == want.type.shape.size() ? a.latent_height : i + 1 == want.type.shape.size() ? a.latent_width : 0;
      if (d.concrete() && given && given != d.n)
        return fail(error("the model's latents are " + shape_str(want.type.shape) + ": --latent-height/--latent-width " +
                          std::to_string(given) + " does not fit"));
      if (!d.concrete() && given < 1)
        return fail(error("the model takes latents of any size " + shape_str(want.type.shape) +
                          ": give --latent-height and --latent-width, or --latents"));
      shape.push_back(d.concrete() ? d.n : given);
    }
    if (Status st = check_loop_size(shape, a.steps); !st.ok()) return fail(st.error());  // before the noise is made
    latents = seeded_latents(shape, a.seed);
    std::fprintf(stderr, "latents: seeded normal noise %s, seed %llu\n", dims_str(shape).c_str(), (unsigned long long)a.seed);
  }
  opt.noise_seed = noise_seed_of(a.seed);
  const auto t0 = std::chrono::steady_clock::now();
  opt.on_step = [&](int k, int n) {
    if (!isatty(2)) return;
    const int width = 30, done = width * k / n;
    std::fprintf(stderr, "\r\033[Kdenoise [%s%s] step %d/%d", std::string(size_t(done), '#').c_str(),
                 std::string(size_t(width - done), '.').c_str(), k, n);
    if (k == n) std::fprintf(stderr, "\n");
  };
  if (!a.pooled.empty()) {
    auto p = only_tensor(a.pooled, "the pooled projections");
    if (!p.ok()) return fail(p.error());
    opt.extra["pooled_projections"] = *p;
  }
  if (!a.negative_pooled.empty()) {
    auto p = only_tensor(a.negative_pooled, "the negative pooled projections");
    if (!p.ok()) return fail(p.error());
    opt.negative_extra["pooled_projections"] = *p;
  }
  auto r = denoise(**m, **scheduler, latents, opt);
  if (!r.ok()) return fail(r.error());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Tensor ts = Tensor::zeros(DType::F32, {int64_t(r->timesteps.size())});
  for (size_t i = 0; i < r->timesteps.size(); ++i) ts.f32()[i] = r->timesteps[i];
  Status st = write_safetensors(a.out, {{"latents", r->latents}, {"trajectory", r->trajectory},
                                        {"noise_preds", r->noise_preds}, {"timesteps", ts}});
  if (!st.ok()) return fail(st.error());
  const std::string how = r->guidance_input ? "guidance input " + std::to_string(opt.guidance).substr(0, 4)
                          : r->guided       ? "guidance " + std::to_string(opt.guidance).substr(0, 4)
                                            : std::string("no guidance");
  std::fprintf(stderr, "%s: %d steps (%s, %s) in %.2f s, %.3f s per step; wrote %s\n", (*m)->family.c_str(), a.steps,
               config_path.c_str(), how.c_str(),
               seconds, seconds / a.steps, OutputFile::shown(a.out).c_str());
  return 0;
}

}  // namespace arch::cli

// archrun denoise: a diffusion denoiser's sampling loop from given (or
// seeded) latents and a context, as the checkpoint's scheduler config says.
#include <chrono>
#include <cstdio>
#include <random>

#include <unistd.h>

#include "importer/safetensors.h"
#include "runtime/denoise.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

namespace {

// The one tensor a file holds (by any name).
Result<Tensor> only_tensor(const std::string& path, const char* what) {
  auto f = read_safetensors(path);
  if (!f.ok()) return f.error();
  if (f->tensors.size() != 1)
    return error(path + ": " + what + " must be one tensor, the file holds " + std::to_string(f->tensors.size()));
  Tensor t = f->tensors.begin()->second;
  if (t.dtype != DType::F32) t = to_f32(t);
  return t;
}

}  // namespace

int run_denoise(const DenoiseArgs& a) {
  if (a.steps < 1) return fail(error("--steps must be at least 1, not " + std::to_string(a.steps)));
  if (a.context.empty()) return fail(error("give the context (encoder_hidden_states) as --context FILE.safetensors"));
  auto m = open_model(a.common);
  if (!m.ok()) return fail(m.error());
  std::string config_path;
  auto sc = read_scheduler_config((*m)->checkpoint.dir, &config_path);
  if (!sc.ok()) return fail(sc.error());
  auto scheduler = make_scheduler(*sc, config_path);
  if (!scheduler.ok()) return fail(scheduler.error());
  DenoiseOptions opt;
  opt.steps = a.steps;
  opt.guidance = a.guidance;
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
    // Seeded standard normal noise of the shape the graph takes.
    auto g = (*m)->find_graph("denoise");
    if (!g.ok()) return fail(g.error());
    const Graph& dg = (*g)->graph;
    const Value& want = dg.values[size_t(dg.find_input("sample") >= 0 ? dg.find_input("sample") : dg.find_input("hidden_states"))];
    Dims shape;
    for (const auto& d : want.type.shape) {
      if (!d.concrete()) return fail(error("the model's latents have a run-time size: give them with --latents"));
      shape.push_back(d.n);
    }
    latents = Tensor::zeros(DType::F32, shape);
    std::mt19937_64 rng(a.seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (int64_t i = 0; i < latents.numel(); ++i) latents.f32()[i] = normal(rng);
    std::fprintf(stderr, "latents: seeded normal noise %s, seed %llu\n", dims_str(shape).c_str(), (unsigned long long)a.seed);
  }
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
  const bool guided = opt.negative_context.data && opt.guidance != 1.0f;
  std::fprintf(stderr, "%s: %d steps (%s, %s) in %.2f s, %.3f s per step; wrote %s\n", (*m)->family.c_str(), a.steps,
               config_path.c_str(), guided ? ("guidance " + std::to_string(opt.guidance).substr(0, 4)).c_str() : "no guidance",
               seconds, seconds / a.steps, a.out.c_str());
  return 0;
}

}  // namespace arch::cli

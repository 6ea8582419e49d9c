#include "runtime/denoise.h"

#include <cmath>
#include <cstring>


namespace arch {

namespace {

// A tensor without a leading batch dim of 1 (files hold [1, C, H, W]).
Tensor unbatched(const Tensor& t, size_t rank) {
  if (t.shape.size() == rank + 1 && t.shape[0] == 1) return t.reshaped(Dims(t.shape.begin() + 1, t.shape.end()));
  return t;
}

void put_row(Tensor& stack, int64_t row, const Tensor& t) {
  std::memcpy(stack.f32() + row * t.numel(), t.f32(), size_t(t.numel()) * sizeof(float));
}

}  // namespace

Result<DenoiseResult> denoise(const Model& m, Scheduler& scheduler, const Tensor& initial_latents,
                              const DenoiseOptions& opt) {
  ARCH_TRY(const ModelGraph* g, m.find_graph("denoise"));
  const Graph& graph = g->graph;
  const std::string latent_name = graph.find_input("sample") >= 0 ? "sample" : "hidden_states";
  const int sample_in = graph.find_input(latent_name);
  const int context_in = graph.find_input("encoder_hidden_states");
  const int time_in = graph.find_input("timestep");
  if (sample_in < 0 || time_in < 0 || context_in < 0)
    return error(m.template_path + ": the denoise graph must take sample (or hidden_states), timestep and encoder_hidden_states");
  for (int v : graph.inputs) {
    const std::string& name = graph.values[size_t(v)].name;
    if (v != sample_in && v != context_in && v != time_in && !opt.extra.count(name))
      return error(m.template_path + ": the denoise graph also takes '" + name + "' (give it: --pooled for pooled_projections)");
  }
  // The latents and contexts as the graph takes them, checked against it.
  const Value& want = graph.values[sample_in];
  Tensor x = unbatched(initial_latents, want.type.shape.size());
  if (x.dtype != DType::F32 || x.shape.size() != want.type.shape.size())
    return error("the latents are " + dims_str(initial_latents.shape) + ", the model takes " + shape_str(want.type.shape));
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (want.type.shape[d].concrete() && want.type.shape[d].n != x.shape[d])
      return error("the latents are " + dims_str(x.shape) + ", the model takes " + shape_str(want.type.shape) +
                   " (channels and size from its config)");
  const Shape& cw = graph.values[context_in].type.shape;
  auto check_context = [&](const Tensor& c, const char* what) -> Result<Tensor> {
    Tensor t = unbatched(c, 2);
    if (t.dtype != DType::F32 || t.shape.size() != 2 || (cw[1].concrete() && t.shape[1] != cw[1].n))
      return error(std::string("the ") + what + " is " + dims_str(c.shape) + ", the model takes [tokens, " +
                   (cw[1].concrete() ? std::to_string(cw[1].n) : std::string("any")) + "] (cross_attention_dim)");
    return t;
  };
  ARCH_TRY(Tensor cond, check_context(opt.context, "context"));
  const bool guided = opt.negative_context.data && opt.guidance != 1.0f;
  Tensor uncond;
  if (guided) {
    ARCH_TRY(uncond, check_context(opt.negative_context, "negative context"));
  }
  ARCH_TRY(std::vector<float> ts, scheduler.set_timesteps(opt.steps));
  DenoiseResult r;
  r.timesteps = ts;
  Dims stack = x.shape;
  stack.insert(stack.begin(), int64_t(ts.size()) + 1);
  r.trajectory = Tensor::zeros(DType::F32, stack);
  stack[0] = int64_t(ts.size());
  r.noise_preds = Tensor::zeros(DType::F32, stack);
  // The initial latents scaled by the scheduler's init_noise_sigma.
  Tensor latents = Tensor::zeros(DType::F32, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) latents.f32()[i] = x.f32()[i] * scheduler.init_noise_sigma();
  put_row(r.trajectory, 0, latents);
  Session session(m);
  for (size_t k = 0; k < ts.size(); ++k) {
    // The timestep as the graph takes it: an int (a UNet's) or a float (SD3's sigma x 1000).
    Tensor t = Tensor::zeros(graph.values[size_t(time_in)].type.dtype, {1});
    if (t.dtype == DType::I32) t.i32()[0] = int32_t(std::lround(ts[k]));
    else t.f32()[0] = ts[k];
    auto eval = [&](const Tensor& context, const NamedTensors& extra) -> Result<Tensor> {
      NamedTensors in = extra;
      in[latent_name] = latents;
      in["timestep"] = t;
      in["encoder_hidden_states"] = context;
      ARCH_TRY(NamedTensors out, session.run("denoise", std::move(in), {"sample"}));
      return out.at("sample");
    };
    ARCH_TRY(Tensor eps, eval(cond, opt.extra));
    if (guided) {
      ARCH_TRY(Tensor e0, eval(uncond, opt.negative_extra.empty() ? opt.extra : opt.negative_extra));
      Tensor mixed = Tensor::zeros(DType::F32, eps.shape);
      for (int64_t i = 0; i < eps.numel(); ++i)
        mixed.f32()[i] = e0.f32()[i] + opt.guidance * (eps.f32()[i] - e0.f32()[i]);
      eps = mixed;
    }
    if (eps.shape != latents.shape)
      return error("the model's output " + dims_str(eps.shape) + " is not the latents' shape " + dims_str(latents.shape) +
                   " (a model predicting variance too is not a DDIM denoiser)");
    put_row(r.noise_preds, int64_t(k), eps);
    latents = scheduler.step(eps, k, latents);
    put_row(r.trajectory, int64_t(k) + 1, latents);
    if (opt.on_step) opt.on_step(int(k) + 1, int(ts.size()));
  }
  r.latents = latents;
  return r;
}

}  // namespace arch

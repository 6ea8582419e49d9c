#include "engine/runtime/denoise.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "engine/core/limits.h"

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

Status check_guidance(float guidance, const std::string& name) {
  if (std::isfinite(guidance) && guidance >= 0.0f && guidance <= 100.0f) return {};
  char shown[32];
  std::snprintf(shown, sizeof shown, "%g", double(guidance));
  return error(name + " is " + shown + ": a guidance scale must be a number from 0 to 100");
}

Status check_loop_size(const Dims& shape, int steps) {
  int64_t elements = 1;
  for (int64_t d : shape) elements = saturating_product({elements, d});
  const int64_t copies = 2 * int64_t(std::max(steps, 0)) + 1;
  return check_limit("latent_elements", saturating_product({elements, copies}), "",
                     "the latents a loop of " + std::to_string(steps) + " steps over " + dims_str(shape) + " keeps (" +
                         std::to_string(copies) + " of them: the trajectory and the noise predictions), in elements");
}

Result<DenoiseResult> denoise(const Model& m, Scheduler& scheduler, const Tensor& initial_latents,
                              const DenoiseOptions& opt) {
  if (opt.steps < 1) return error("a sampling loop needs at least 1 step, not " + std::to_string(opt.steps));
  ARCH_TRY_STATUS(check_guidance(opt.guidance));
  // Image to image: the steps it runs, and what it starts from.
  const bool from_image = opt.image_latents.data != nullptr;
  if (from_image && !(std::isfinite(opt.strength) && opt.strength > 0.0f && opt.strength <= 1.0f))
    return error("the strength must be above 0 and at most 1, not " + std::to_string(opt.strength));
  const int run_steps = from_image ? std::min(int(float(opt.steps) * opt.strength), opt.steps) : opt.steps;
  if (run_steps < 1)
    return error("a strength of " + std::to_string(opt.strength) + " over " + std::to_string(opt.steps) +
                 " steps leaves no step to run (steps x strength must be at least 1)");
  const size_t first = size_t(opt.steps - run_steps);
  if (opt.mask.data && !from_image) return error("a mask needs the image it keeps (image latents)");
  ARCH_TRY(const ModelGraph* g, m.find_graph("denoise"));
  const Graph& graph = g->graph;
  const std::string latent_name = graph.find_input("sample") >= 0 ? "sample" : "hidden_states";
  const int sample_in = graph.find_input(latent_name);
  const int context_in = graph.find_input("encoder_hidden_states");
  const int time_in = graph.find_input("timestep");
  if (sample_in < 0 || time_in < 0 || context_in < 0)
    return error(m.template_path + ": the denoise graph must take sample (or hidden_states), timestep and encoder_hidden_states");
  // The loop's side graphs, where the template has them.
  auto side = [&](const char* name) -> const ModelGraph* {
    auto r = m.find_graph(name);
    return r.ok() ? *r : nullptr;
  };
  const ModelGraph* pack = side("pack");
  const ModelGraph* unpack = side("unpack");
  const ModelGraph* timestep_graph = side("timestep");
  if (pack && !unpack) return error(m.template_path + ": a template with a pack graph needs an unpack graph too");
  // The latents as the loop holds them, checked against what takes them.
  const Graph& takes = pack ? pack->graph : graph;
  const int x_in = pack ? takes.find_input("latents") : sample_in;
  if (x_in < 0) return error(m.template_path + ": the pack graph must take the latents as 'latents'");
  const Value& want = takes.values[size_t(x_in)];
  Tensor x = unbatched(initial_latents, want.type.shape.size());
  if (x.dtype != DType::F32 || x.shape.size() != want.type.shape.size())
    return error("the latents are " + dims_str(initial_latents.shape) + ", the model takes " + shape_str(want.type.shape));
  Tensor conditioning;
  if (opt.conditioning.data) {
    conditioning = unbatched(opt.conditioning, x.shape.size());
    if (pack) return error(m.template_path + ": channels beside packed latents are not supported");
    if (conditioning.dtype != DType::F32 || conditioning.shape.size() != 3 || x.shape.size() != 3 ||
        conditioning.dim(1) != x.dim(1) || conditioning.dim(2) != x.dim(2))
      return error("the channels beside the latents are " + dims_str(opt.conditioning.shape) + ", the latents " +
                   dims_str(x.shape) + ": they need the latents' height and width");
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t have = x.shape[d] + (d == 0 && conditioning.data ? conditioning.dim(0) : 0);
    if (want.type.shape[d].concrete() && want.type.shape[d].n != have)
      return error("the latents are " + dims_str(x.shape) +
                   (conditioning.data ? " with " + std::to_string(conditioning.dim(0)) + " channels beside them" : "") +
                   ", the model takes " + shape_str(want.type.shape) + " (channels and size from its config)");
  }
  ARCH_TRY_STATUS(check_loop_size(x.shape, opt.steps));
  const Shape& cw = graph.values[context_in].type.shape;
  auto check_context = [&](const Tensor& c, const char* what) -> Result<Tensor> {
    Tensor t = unbatched(c, 2);
    if (t.dtype != DType::F32 || t.shape.size() != 2 || (cw[1].concrete() && t.shape[1] != cw[1].n))
      return error(std::string("the ") + what + " is " + dims_str(c.shape) + ", the model takes [tokens, " +
                   (cw[1].concrete() ? std::to_string(cw[1].n) : std::string("any")) + "] (cross_attention_dim)");
    return t;
  };
  // A guidance-distilled model (Flux-dev) takes the guidance as an input:
  // one pass per step, no negative context.
  const bool guidance_input = graph.find_input("guidance") >= 0;
  if (guidance_input && opt.negative_context.data)
    return error(m.template_path + ": this model takes the guidance as an input (guidance-distilled); it runs no "
                 "negative context");
  const bool guided = !guidance_input && opt.negative_context.data && opt.guidance != 1.0f;
  if (opt.low_noise) {
    ARCH_TRY_STATUS(check_guidance(opt.guidance_2));
    if (opt.low_noise->template_path != m.template_path)
      return error("the low-noise denoiser runs " + opt.low_noise->template_path + ", the first " + m.template_path +
                   ": the two experts must be of one template");
  }
  Session session(m);
  std::unique_ptr<Session> low_session;
  if (opt.low_noise) low_session = std::make_unique<Session>(*opt.low_noise);
  // Everything but the latents and the timestep, for one context: the
  // extras, the pack graph's outputs (the text's ids), the guidance.
  Tensor packed;
  auto inputs_for = [&](const Tensor& context, const NamedTensors& extra) -> Result<NamedTensors> {
    NamedTensors in = extra;
    in["encoder_hidden_states"] = context;
    if (pack) {
      NamedTensors pin{{"latents", x}};
      if (pack->graph.find_input("encoder_hidden_states") >= 0) pin["encoder_hidden_states"] = context;
      std::vector<std::string> outs;
      for (const GraphOutput& o : pack->graph.outputs) outs.push_back(o.name);
      ARCH_TRY(NamedTensors po, session.run("pack", std::move(pin), outs));
      for (auto& [name, t] : po) {
        if (name == latent_name) packed = t;
        else in[name] = t;
      }
    }
    if (guidance_input) {
      Tensor gt = Tensor::zeros(DType::F32, {1});
      gt.f32()[0] = opt.guidance;
      in["guidance"] = gt;
    }
    for (int v : graph.inputs) {
      const std::string& name = graph.values[size_t(v)].name;
      if (v != sample_in && v != time_in && !in.count(name) && !graph.default_of(v))  // one with a default may be left out
        return error(m.template_path + ": the denoise graph also takes '" + name + "' (give it: --pooled for pooled_projections)");
    }
    return in;
  };
  ARCH_TRY(Tensor cond_context, check_context(opt.context, "context"));
  ARCH_TRY(NamedTensors cond, inputs_for(cond_context, opt.extra));
  NamedTensors uncond;
  if (guided) {
    ARCH_TRY(Tensor c, check_context(opt.negative_context, "negative context"));
    ARCH_TRY(uncond, inputs_for(c, opt.negative_extra.empty() ? opt.extra : opt.negative_extra));
  }
  if (pack && !packed.data) return error(m.template_path + ": the pack graph must output '" + latent_name + "'");
  if (from_image && pack) return error(m.template_path + ": image to image over packed latents is not supported");
  Tensor image_latents, mask;
  if (from_image) {
    image_latents = unbatched(opt.image_latents, x.shape.size());
    if (image_latents.shape != x.shape)
      return error("the image's latents are " + dims_str(opt.image_latents.shape) + ", the loop's " + dims_str(x.shape));
  }
  if (opt.mask.data) {
    mask = opt.mask.reshaped({opt.mask.numel()});
    if (x.shape.size() != 3 || mask.numel() != x.shape[1] * x.shape[2])
      return error("the mask is " + dims_str(opt.mask.shape) + ", the latents " + dims_str(x.shape) + ": one value per latent pixel");
  }
  // The loop's latents back as [C, H, W].
  auto unpacked = [&](const Tensor& z) -> Result<Tensor> {
    if (!unpack) return z;
    ARCH_TRY(NamedTensors out, session.run("unpack", {{latent_name, z}, {"like", x}}, {"latents"}));
    return out.at("latents");
  };
  // A resolution-dependent shift reads the image's token count.
  scheduler.seed_noise(opt.noise_seed);
  ARCH_TRY(std::vector<float> ts, scheduler.set_timesteps(opt.steps, pack ? packed.dim(0) : 0));
  if (ts.size() != size_t(opt.steps))
    return error("the scheduler made " + std::to_string(ts.size()) + " timesteps for " + std::to_string(opt.steps) + " steps");
  DenoiseResult r;
  r.timesteps.assign(ts.begin() + std::ptrdiff_t(first), ts.end());
  r.guided = guided;
  r.guidance_input = guidance_input;
  Dims stack = x.shape;
  stack.insert(stack.begin(), int64_t(run_steps) + 1);
  r.trajectory = Tensor::zeros(DType::F32, stack);
  stack[0] = int64_t(run_steps);
  r.noise_preds = Tensor::zeros(DType::F32, stack);
  // The initial latents scaled by the scheduler's init_noise_sigma, or the
  // image's noised to the first step run by them (inpainting at full
  // strength: the noise alone).
  Tensor latents = Tensor::zeros(DType::F32, pack ? packed.shape : x.shape);
  const Tensor& start = pack ? packed : x;
  if (from_image && !((mask.data || conditioning.data) && opt.strength >= 1.0f)) {
    latents = scheduler.add_noise(image_latents, x, first);
  } else {
    for (int64_t i = 0; i < start.numel(); ++i) latents.f32()[i] = start.f32()[i] * scheduler.init_noise_sigma();
  }
  {
    ARCH_TRY(Tensor row, unpacked(latents));
    put_row(r.trajectory, 0, row);
  }
  for (size_t k = first; k < ts.size(); ++k) {
    // The timestep as the graph takes it: an int (a UNet's), a float (SD3's
    // sigma x 1000), or what the template's timestep graph makes of it.
    Tensor t = Tensor::zeros(graph.values[size_t(time_in)].type.dtype, {1});
    if (t.dtype == DType::I32) t.i32()[0] = int32_t(std::lround(ts[k]));
    else t.f32()[0] = ts[k];
    if (timestep_graph) {
      Tensor loop_t = Tensor::zeros(DType::F32, {1});
      loop_t.f32()[0] = ts[k];
      ARCH_TRY(NamedTensors out, session.run("timestep", {{"t", loop_t}}, {"timestep"}));
      t = out.at("timestep");
    }
    Tensor model_in = scheduler.scale_model_input(latents, k);
    if (conditioning.data) {  // [latents; the channels beside them]
      Tensor both = Tensor::zeros(DType::F32, {model_in.dim(0) + conditioning.dim(0), x.dim(1), x.dim(2)});
      std::memcpy(both.f32(), model_in.f32(), model_in.nbytes());
      std::memcpy(both.f32() + model_in.numel(), conditioning.f32(), conditioning.nbytes());
      model_in = both;
    }
    // The high-noise expert down to the boundary, the low-noise one after (WanPipeline's t >= boundary).
    const bool low = low_session && ts[k] < opt.boundary_timestep;
    Session& expert = low ? *low_session : session;
    const float scale = low ? opt.guidance_2 : opt.guidance;
    auto eval = [&](const NamedTensors& base) -> Result<Tensor> {
      NamedTensors in = base;
      in[latent_name] = model_in;
      in["timestep"] = t;
      ARCH_TRY(NamedTensors out, expert.run("denoise", std::move(in), {"sample"}));
      return out.at("sample");
    };
    ARCH_TRY(Tensor eps, eval(cond));
    if (guided) {
      ARCH_TRY(Tensor e0, eval(uncond));
      Tensor mixed = Tensor::zeros(DType::F32, eps.shape);
      for (int64_t i = 0; i < eps.numel(); ++i)
        mixed.f32()[i] = e0.f32()[i] + scale * (eps.f32()[i] - e0.f32()[i]);
      eps = mixed;
    }
    if (eps.shape != latents.shape)
      return error("the model's output " + dims_str(eps.shape) + " is not the latents' shape " + dims_str(latents.shape) +
                   " (a model predicting variance too is not a DDIM denoiser)");
    {
      ARCH_TRY(Tensor row, unpacked(eps));
      put_row(r.noise_preds, int64_t(k - first), row);
    }
    latents = scheduler.step(eps, k, latents);
    if (mask.data) {  // the kept part: the image at the next step's noise, at the end itself
      const Tensor kept = k + 1 < ts.size() ? scheduler.add_noise(image_latents, x, k + 1) : image_latents;
      const int64_t plane = mask.numel();
      for (int64_t i = 0; i < latents.numel(); ++i) {
        const float m = mask.f32()[i % plane];
        latents.f32()[i] = (1.0f - m) * kept.f32()[i] + m * latents.f32()[i];
      }
    }
    ARCH_TRY(Tensor row, unpacked(latents));
    put_row(r.trajectory, int64_t(k - first) + 1, row);
    if (opt.on_step) opt.on_step(int(k - first) + 1, run_steps);
  }
  ARCH_TRY(r.latents, unpacked(latents));
  return r;
}

}  // namespace arch

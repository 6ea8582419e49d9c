// archrun bench: how fast a model loads, reads a prompt and decodes, on
// seeded random token ids; --json prints one object as the last line.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/runtime/generate.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/kv_footprint.h"
#include "engine/runtime/session.h"
#include "engine/runtime/speak.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/kernels.h"
#include "engine/runtime/forward.h"
#include "engine/runtime/denoise.h"
#include "engine/runtime/pipeline.h"
#include "tools/archrun/bench_graph.h"
#include "tools/archrun/commands.h"
#include "tools/bench/gemm_rate.h"
#include "tools/bench/read_bandwidth.h"

namespace arch::cli {

namespace {

// Peak resident memory of this process, from the kernel's accounting.
double peak_rss_mb() { return own_peak_rss_mb(); }

// Bytes of weights one decode step reads: each weight read by an op other
// than embed (which takes one row per token), once; a tied table counts,
// as the output projection reads all of it. Nodes folded at load read
// theirs only then. The KV cache's reads are left out (decode here starts
// from a short context). -1 with MoE experts, whose share read per token
// depends on the routing.
int64_t weight_bytes_per_token(const Program& p) {
  int64_t bytes = 0;
  std::vector<char> seen(p.weights.size(), 0);
  for (size_t i = 0; i < p.graph->nodes.size(); ++i) {
    const Node& n = p.graph->nodes[i];
    if (n.op == "embed" || p.steps[i].folded || p.steps[i].per_session) continue;  // once, not per token
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int in = n.inputs[k];
      if (in < 0 || size_t(in) >= p.weights.size() || !p.weights[size_t(in)].data || seen[size_t(in)]++) continue;
      const Tensor& w = p.weights[size_t(in)];
      int64_t b = int64_t(w.nbytes());
      // Experts [E, N, K]: a token reads the k of them its router picks
      // (k = the indices' last dim; a per-head product picks every one).
      if (n.op == "routed_matmul" && k == 1 && n.inputs.size() > 2 && !w.shape.empty() && w.shape[0] > 0) {
        const Shape& idx = p.graph->values[size_t(n.inputs[2])].type.shape;
        if (idx.empty() || !idx.back().concrete()) return -1;
        b = b * std::min<int64_t>(idx.back().n, w.shape[0]) / w.shape[0];
      }
      bytes += b;
    }
  }
  return bytes;
}

// Whether a matmul of the program multiplies by BF16 weights (as stored or
// in tiles): their prompts are where --bf16-activations changes anything
// (on CPUs with bf16 arithmetic; elsewhere they are widened to f32).
bool has_bf16_matmuls(const Program& p) {
  for (const Node& n : p.graph->nodes) {
    if (n.op != "matmul" || n.inputs.size() < 2) continue;
    const int w = n.inputs[1];
    if (w >= 0 && size_t(w) < p.weights.size() && p.weights[size_t(w)].data &&
        p.weights[size_t(w)].dtype == DType::BF16)
      return true;
  }
  return false;
}

// Resets the kernel's peak-RSS mark to the present RSS (Linux: "5" to
// clear_refs); false where that is not allowed.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return f.good();
}

// The machine's read bandwidth now: 256 MiB (far beyond the caches), best
// of 5 passes.
double probe_bandwidth() { return read_bandwidth(size_t(256) << 20, 5); }

}  // namespace

// The first lines of a model's benchmark: what ran where, and its load.
void print_header(const Model& m, double load_ms) {
  std::printf("%s (%s, %s backend, %s, %d threads)\n", m.checkpoint.dir.c_str(), m.family.c_str(),
              m.program().backend.c_str(), cpu_features().describe().c_str(), omp_get_max_threads());
  std::printf("  load            %10.1f ms\n", load_ms);
}

// The graph's value shapes for one call's inputs: each node's shape rule
// re-run where its output has a `_` (an image of any size), as the
// interpreter does at the call. A value-shaped op's output (its size from
// its inputs' values) takes `value_rows` as its first dim: what the run
// made (a voice's frames); < 0: left unknown.
std::vector<Shape> shapes_for(const Graph& g, const NamedTensors& in, int64_t value_rows) {
  std::vector<Shape> s(g.values.size());
  for (size_t v = 0; v < g.values.size(); ++v) s[v] = g.values[v].type.shape;
  for (int v : g.inputs)
    if (auto it = in.find(g.values[size_t(v)].name); it != in.end()) s[size_t(v)] = shape_of(it->second.shape);
  for (const Node& n : g.nodes) {
    bool dyn = false;
    for (int o : n.outputs)
      for (const Dim& d : g.values[size_t(o)].type.shape) dyn = dyn || d.sym == kDynSym;
    const OpDef* def = dyn ? op_table().find(n.op) : nullptr;
    if (!def) continue;
    if (def->value_shape) {
      if (value_rows < 0 || n.inputs.empty() || n.inputs[0] < 0 || s[size_t(n.inputs[0])].empty()) continue;
      Shape rows = s[size_t(n.inputs[0])];
      rows[0] = Dim::of(value_rows);
      s[size_t(n.outputs[0])] = rows;
      continue;
    }
    std::vector<TypedShape> types;
    std::unique_ptr<bool[]> present(new bool[n.inputs.size() + 1]);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const int v = n.inputs[i];
      types.push_back({v >= 0 ? g.values[size_t(v)].type.dtype : DType::F32, v >= 0 ? s[size_t(v)] : Shape{}});
      present[i] = v >= 0;
    }
    auto r = def->shape(types, std::span<const bool>(present.get(), n.inputs.size()), n.attrs);
    if (!r.ok()) continue;
    for (size_t k = 0; k < n.outputs.size() && k < r->size(); ++k) s[size_t(n.outputs[k])] = (*r)[k].shape;
  }
  return s;
}

// The multiply-adds (x2) of a graph's products whose shapes are all
// concrete: matmuls, attention (q k^T and p v), conv1d, conv2d and
// conv_transpose1d; 0 where
// a run-time dim leaves them unknown until a call.
// `shapes`: each value's shape for one call's inputs (shapes_for), where
// the graph's own leave `_` dims.
double graph_gflop(const Graph& g, const std::map<int, int64_t>& bound, const std::vector<Shape>* shapes) {
  auto shape = [&](int v) -> const Shape& { return shapes ? (*shapes)[size_t(v)] : g.values[size_t(v)].type.shape; };
  auto size = [&](const Dim& d) -> double {
    if (d.concrete()) return double(d.n);
    auto it = bound.find(d.sym);
    return it != bound.end() ? double(it->second) : -1.0;
  };
  auto numel = [&](const Shape& s) {
    double n = 1;
    for (const Dim& d : s)
      if (size(d) >= 0) n *= size(d);
      else return -1.0;
    return n;
  };
  double flop = 0;
  for (const Node& n : g.nodes) {
    if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty()) continue;
    const Shape& a = shape(n.inputs[0]);
    const Shape& out = shape(n.outputs[0]);
    double f = 0;
    if (n.op == "matmul" && !a.empty() && a.back().concrete()) {
      f = 2 * numel(out) * double(a.back().n);
    } else if (n.op == "attention" && n.inputs.size() >= 3) {
      const Shape& k = shape(n.inputs[1]);
      const Shape& v = shape(n.inputs[2]);
      if (a.size() == 3 && k.size() == 3 && v.size() == 3 && size(k[0]) >= 0 && v[2].concrete())
        f = 2 * numel(a) * size(k[0]) + 2 * numel(out) * size(k[0]);  // q k^T, then p v
    } else if ((n.op == "conv1d" || n.op == "conv2d") && n.inputs.size() >= 2) {
      const Shape& w = shape(n.inputs[1]);
      double per = 1;
      for (size_t i = 1; i < w.size(); ++i) per *= size(w[i]) >= 0 ? size(w[i]) : -1e30;
      f = 2 * numel(out) * per;
    } else if (n.op == "conv_transpose1d" && n.inputs.size() >= 2) {
      const Shape& w = shape(n.inputs[1]);  // [C, O/groups, K]: each input element scatters O/groups x K
      f = w.size() == 3 && size(w[1]) >= 0 && size(w[2]) >= 0 ? 2 * numel(a) * size(w[1]) * size(w[2]) : -1;
    }
    if (f < 0) return 0;
    flop += f;
  }
  return flop / 1e9;
}

namespace {

// An encoder-decoder (T5, Whisper): the encoder on one input of the size
// it takes (a log-mel window of seeded noise, or `prompt_tokens` random
// ids), then `new_tokens` greedy decoder steps from the start token; the
// encoder's time per input and the decoder's tokens/s, medians over
// `repeat`.
int bench_encoder_decoder(const Common& c, const Model& m, double load_ms, int prompt_tokens, int new_tokens,
                          bool as_json, bool profile, int repeat) {
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  std::mt19937 rng(1234);
  NamedTensors enc_in;
  std::string what;
  for (const auto& g : m.graphs) {
    if (g.get() == m.token_graph()) continue;
    if (int v = g->graph.find_input("input_features"); v >= 0) {
      const Shape& s = g->graph.values[size_t(v)].type.shape;
      if (s.size() != 2 || !s[0].concrete() || !s[1].concrete()) return fail(error("input_features must be concrete"));
      Tensor f = Tensor::zeros(DType::F32, {s[0].n, s[1].n});
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (int64_t i = 0; i < f.numel(); ++i) f.f32()[i] = u(rng);
      enc_in["input_features"] = f;
      what = "a [" + std::to_string(s[0].n) + ", " + std::to_string(s[1].n) + "] log-mel window";
    } else if (g->graph.find_input("input_ids") >= 0) {
      const int64_t vocab = m.config_int("vocab_size", 0);
      Tensor ids = Tensor::zeros(DType::I32, {prompt_tokens});
      for (int64_t i = 0; i < prompt_tokens; ++i) ids.i32()[i] = int32_t(rng() % uint32_t(std::max<int64_t>(vocab, 1)));
      enc_in["input_ids"] = ids;
      what = std::to_string(prompt_tokens) + " input tokens";
    }
  }
  if (enc_in.empty()) return fail(error("bench: the encoder takes neither input_features nor input_ids"));
  auto start = decoder_start_token(m);
  if (!start.ok()) return fail(start.error());
  OpProfile enc_profile, dec_profile;
  std::vector<double> enc_s, dec_s;
  // One session, as a long recording's windows share one: the first run
  // also pays for the session's buffers (its pages faulted in), and is
  // left out of the medians when there are more.
  Session s(m, session_options(c, new_tokens));
  NamedTensors state;  // what the encoder made: the shapes a decode step's held reads take
  const int runs = repeat > 1 ? repeat + 1 : 1;
  for (int r = 0; r < runs; ++r) {
    if (profile && (r > 0 || runs == 1)) s.profile_with(&enc_profile);
    auto t0 = clock::now();
    auto made = s.encode(enc_in);
    if (!made.ok()) return fail(made.error());
    auto t1 = clock::now();
    state = std::move(*made);
    if (profile && (r > 0 || runs == 1)) s.profile_with(&dec_profile);
    int32_t next = *start;
    auto t2 = clock::now();
    for (int k = 0; k < new_tokens; ++k) {
      if (k == 1) t2 = clock::now();  // the first step makes the cross-attention K/V: counted apart
      auto o = s.step(std::vector<int32_t>{next}, {"logits"}, /*last_only=*/true);
      if (!o.ok()) return fail(o.error());
      const Tensor& l = o->at("logits");
      next = argmax({l.f32() + (l.numel() - l.dim(-1)), size_t(l.dim(-1))});
    }
    s.profile_with(nullptr);
    if (runs > 1 && r == 0) continue;
    enc_s.push_back(seconds(t0, t1));
    dec_s.push_back(new_tokens > 1 ? seconds(t2, clock::now()) / (new_tokens - 1) : 0.0);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double enc = median(enc_s), step = median(dec_s);
  // A decode step reads the weights and what it holds from the encoder
  // (the cross-attention keys and values, made once per input): both bound it.
  const Program& dp = m.token_graph()->program;
  const int64_t weights_per_token = weight_bytes_per_token(dp);
  int64_t held_per_token = 0;
  {
    std::map<int, int64_t> dims;  // run-time dims the held inputs bind (src)
    for (int v : dp.graph->held_inputs) {
      auto it = state.find(dp.graph->values[size_t(v)].name);
      if (it == state.end()) continue;
      const Shape& s = dp.graph->values[size_t(v)].type.shape;
      for (size_t d = 0; d < s.size() && d < it->second.shape.size(); ++d)
        if (s[d].is_named()) dims[s[d].sym] = it->second.shape[d];
    }
    std::vector<char> counted(dp.graph->values.size(), 0);
    for (size_t i = 0; i < dp.graph->nodes.size(); ++i) {
      if (dp.steps[i].per_session || dp.steps[i].folded) continue;
      for (int in : dp.graph->nodes[i].inputs) {
        if (in < 0 || !dp.held[size_t(in)] || counted[size_t(in)]++) continue;
        int64_t n = int64_t(dtype_size(dp.graph->values[size_t(in)].type.dtype));
        for (const Dim& d : dp.graph->values[size_t(in)].type.shape)
          n *= d.concrete() ? d.n : (dims.count(d.sym) ? dims[d.sym] : 0);
        held_per_token += n;
      }
    }
  }
  const int64_t per_token = weights_per_token + held_per_token;
  const double bw = probe_bandwidth();
  const double gemm = measure_gemm_gflops();  // the yardstick, in the same run
  double enc_gflop = 0;
  for (const auto& g : m.graphs)
    if (g.get() != m.token_graph()) enc_gflop += graph_gflop(*g->program.graph);
  nlohmann::json j = {{"model", m.checkpoint.dir},
                      {"family", m.family},
                      {"backend", m.program().backend},
                      {"load_ms", load_ms},
                      {"encoder_input", what},
                      {"encode_ms", 1000 * enc},
                      {"encode_gflop", enc_gflop},
                      {"encode_gflop_s", enc > 0 ? enc_gflop / enc : 0.0},
                      {"gemm_gflop_s", gemm},
                      {"encode_share_of_gemm", enc > 0 && gemm > 0 ? enc_gflop / enc / gemm : 0.0},
                      {"decode_tok_s", step > 0 ? 1.0 / step : 0.0},
                      {"new_tokens", new_tokens},
                      {"weights_per_token_mb", double(weights_per_token) / 1e6},
                      {"held_per_token_mb", double(held_per_token) / 1e6},
                      {"read_bandwidth_gb_s", bw / 1e9},
                      {"decode_share_of_bandwidth", step > 0 && bw > 0 ? double(per_token) / step / bw : 0.0},
                      {"peak_rss_mb", peak_rss_mb()},
                      {"threads", omp_get_max_threads()},
                      {"cpu", cpu_features().describe()}};
  if (profile) j["profile"] = {{"encode", profile_json(enc_profile)}, {"decode", profile_json(dec_profile)}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  print_header(m, load_ms);
  std::printf("  encode          %10.1f ms for %s", 1000 * enc, what.c_str());
  if (enc_gflop > 0)
    std::printf(": %.1f GFLOP at %.0f GFLOP/s, %.0f%% of the %.0f GFLOP/s f32 GEMM rate (oneDNN 1024^3, this run)",
                enc_gflop, enc_gflop / enc, 100 * enc_gflop / enc / gemm, gemm);
  std::printf("\n");
  std::printf("  decode %5d    %10.1f tok/s; %.0f MB of weights and %.0f MB held from the encoder per token: %.0f%% of "
              "the %.1f GB/s this machine read\n",
              new_tokens, j["decode_tok_s"].get<double>(), double(weights_per_token) / 1e6,
              double(held_per_token) / 1e6, 100 * j["decode_share_of_bandwidth"].get<double>(), bw / 1e9);
  std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
  if (repeat > 1) std::printf("  (medians of %d runs in one session, after a first that fills its buffers)\n", repeat);
  if (profile) {
    print_profile("encode", j["profile"]["encode"]);
    print_profile("decode", j["profile"]["decode"]);
  }
  return 0;
}

// --latent-size: the latents' dims after the channels, `rank` of them
// ("F,H,W" or "F x H x W"; "H,W"), each positive.
Result<Dims> parse_latent_size(const std::string& text, size_t rank) {
  std::string t = text;
  std::replace(t.begin(), t.end(), 'x', ',');
  auto v = parse_ids(t);
  if (!v.ok() || v->size() != rank || std::any_of(v->begin(), v->end(), [](int32_t n) { return n < 1; }))
    return error("--latent-size must be " + std::string(rank == 3 ? "F,H,W" : "H,W") + ": positive, as the latents take them, not '" +
                 text + "'");
  return Dims(v->begin(), v->end());
}

// A diffusion denoiser (a `denoise` graph): one evaluation on seeded
// latents of the size it takes, timestep 500 and a context of `context`
// tokens (77 by default: CLIP's length, as Stable Diffusion feeds it; SD3
// feeds 333, Flux 512); seconds per evaluation and
// its GFLOP/s beside the f32 GEMM rate measured in the same run. A
// template that packs its latents (Flux's `pack` graph) is given what its
// pack graph makes of latents at the config's sample_size (128 where it
// has none: 1024x1024), the image's tokens and their ids; a video's latents
// [C, F, H, W] at 21 x 60 x 104 (WanPipeline's 81 frames of 480x832);
// `latent_size` ("H,W" or "F,H,W") sets them.
int bench_denoiser(const Model& m, double load_ms, bool as_json, bool profile, int repeat, int64_t context_tokens,
                   const std::string& latent_size) {
  using clock = std::chrono::steady_clock;
  auto g = m.find_graph("denoise");
  if (!g.ok()) return fail(g.error());
  const Graph& graph = (*g)->graph;
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  NamedTensors in;
  std::map<int, int64_t> bound;
  std::string what;
  Session s(m);
  auto packer = m.find_graph("pack");
  if (!packer.ok() && !latent_size.empty())
    return fail(error("--latent-size is for a denoiser that packs its latents (Flux, Wan) or a pipeline; " + m.checkpoint.dir +
                      " takes its latents at its config's sample_size"));
  if (packer.ok()) {
    const Graph& pg = (*packer)->graph;
    const int lv = pg.find_input("latents"), cv = graph.find_input("encoder_hidden_states");
    if (lv < 0 || cv < 0) return fail(error(m.template_path + ": the pack graph takes no latents, or denoise no context"));
    const Shape& ls = pg.values[size_t(lv)].type.shape;
    const Shape& cs = graph.values[size_t(cv)].type.shape;
    if ((ls.size() != 3 && ls.size() != 4) || !ls[0].concrete() || cs.size() != 2 || !cs[1].concrete())
      return fail(error(m.template_path + ": the pack graph's latents are not [C, H, W] or [C, F, H, W], or the context not [tokens, width]"));
    const int64_t side = m.config_int("sample_size", 128);
    if (side < 1) return fail(error(m.checkpoint.dir + ": sample_size must be positive, not " + std::to_string(side)));
    Dims size = ls.size() == 4 ? Dims{21, 60, 104} : Dims{side, side};
    if (!latent_size.empty()) {
      auto v = parse_latent_size(latent_size, ls.size() - 1);
      if (!v.ok()) return fail(v.error());
      size = *v;
    }
    Dims lshape = {ls[0].n};
    lshape.insert(lshape.end(), size.begin(), size.end());
    if (Status st = check_loop_size(lshape, 1); !st.ok()) return fail(st.error());  // before any of it is made
    Tensor latents = Tensor::zeros(DType::F32, lshape), context = Tensor::zeros(DType::F32, {context_tokens, cs[1].n});
    for (Tensor* t : {&latents, &context})
      for (int64_t i = 0; i < t->numel(); ++i) t->f32()[i] = normal(rng);
    NamedTensors pin{{"latents", latents}};
    if (pg.find_input("encoder_hidden_states") >= 0) pin["encoder_hidden_states"] = context;
    std::vector<std::string> outs;
    for (const GraphOutput& o : pg.outputs) outs.push_back(o.name);
    auto packed = s.run("pack", pin, outs);
    if (!packed.ok()) return fail(packed.error());
    in = std::move(*packed);
    in["encoder_hidden_states"] = context;
    what = "latents " + dims_str(latents.shape) + " packed";
  }
  for (int v : graph.inputs) {
    const Value& val = graph.values[size_t(v)];
    if (in.count(val.name)) {  // made by the pack graph: its run-time dims bound by what it made
      const Tensor& t = in.at(val.name);
      for (size_t d = 0; d < val.type.shape.size() && d < t.shape.size(); ++d)
        if (val.type.shape[d].is_named()) bound[val.type.shape[d].sym] = t.shape[d];
      what += (what.empty() ? "" : ", ") + val.name + " " + dims_str(t.shape);
      continue;
    }
    Dims shape;
    for (const Dim& d : val.type.shape) {
      // A `_` is the latents' size (the config's sample_size); a named
      // run-time dim the context's tokens.
      const int64_t n = d.concrete() ? d.n : d.sym == kDynSym ? m.config_int("sample_size", 64) : context_tokens;
      if (d.is_named()) bound[d.sym] = n;
      shape.push_back(n);
    }
    Tensor t = Tensor::zeros(val.type.dtype, shape);
    if (val.type.dtype == DType::I32)
      for (int64_t i = 0; i < t.numel(); ++i) t.i32()[i] = 500;
    else
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = normal(rng);
    in[val.name] = t;
    what += (what.empty() ? "" : ", ") + val.name + " " + dims_str(shape);
  }
  OpProfile prof;
  std::vector<double> runs_s;
  const int runs = repeat > 1 ? repeat + 1 : 1;
  for (int r = 0; r < runs; ++r) {
    if (profile && (r > 0 || runs == 1)) s.profile_with(&prof);
    auto t0 = clock::now();
    auto out = s.run("denoise", in, {"sample"});
    if (!out.ok()) return fail(out.error());
    auto t1 = clock::now();
    s.profile_with(nullptr);
    if (runs > 1 && r == 0) continue;
    runs_s.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(runs_s.begin(), runs_s.end());
  const double sec = runs_s[runs_s.size() / 2];
  const double gemm = measure_gemm_gflops();
  const std::vector<Shape> shapes = shapes_for(*(*g)->program.graph, in);
  const double gflop = graph_gflop(*(*g)->program.graph, bound, &shapes);
  nlohmann::json j = {{"model", m.checkpoint.dir},   {"family", m.family},
                      {"backend", m.program().backend}, {"load_ms", load_ms},
                      {"inputs", what},              {"evaluation_s", sec},
                      {"gflop", gflop},              {"gflop_s", sec > 0 ? gflop / sec : 0.0},
                      {"gemm_gflop_s", gemm},        {"share_of_gemm", sec > 0 && gemm > 0 ? gflop / sec / gemm : 0.0},
                      {"peak_rss_mb", peak_rss_mb()}, {"threads", omp_get_max_threads()},
                      {"cpu", cpu_features().describe()}};
  if (profile) j["profile"] = {{"denoise", profile_json(prof)}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  print_header(m, load_ms);
  std::printf("  evaluation      %10.3f s for %s: %.1f GFLOP at %.0f GFLOP/s, %.0f%% of the %.0f GFLOP/s f32 GEMM rate "
              "(oneDNN 1024^3, this run)\n",
              sec, what.c_str(), gflop, gflop / sec, 100 * gflop / sec / gemm, gemm);
  std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
  if (repeat > 1) std::printf("  (median of %d runs in one session, after a first that fills its buffers)\n", repeat);
  if (profile) print_profile("denoise", j["profile"]["denoise"]);
  return 0;
}

// A text-to-speech model (a graph with a `waveform` output): seeded random
// characters of the voice's vocabulary with the blank (id 0) around each, as
// VitsTokenizer lays them out, as many as make about `audio_seconds` of
// speech (a first run finds how long an id lasts); the real-time factor,
// compute over audio seconds, the median of `repeat` runs.
int bench_speech(const Model& m, double load_ms, double audio_seconds, bool as_json, bool profile, int repeat) {
  const int64_t vocab = m.config_int("vocab_size", 0);
  if (vocab < 2) return fail(error("bench: a voice needs a vocab_size of at least 2 (the blank and a character)"));
  std::mt19937 rng(1234);
  auto text_of = [&](int64_t chars) {
    std::vector<int32_t> ids{0};
    for (int64_t k = 0; k < chars; ++k) ids.push_back(1 + int32_t(rng() % uint32_t(vocab - 1))), ids.push_back(0);
    return ids;
  };
  const int64_t probe_chars = 32;
  auto probe = speak(m, text_of(probe_chars));
  if (!probe.ok()) return fail(probe.error());
  const int64_t chars = std::clamp<int64_t>(std::llround(double(probe_chars) * audio_seconds / std::max(probe->seconds(), 1e-3)),
                                            1, 1 << 16);
  const std::vector<int32_t> ids = text_of(chars);
  OpProfile prof;
  SpeakOptions opt;
  std::vector<Speech> runs;
  for (int r = 0; r < std::max(repeat, 1); ++r) {
    opt.profile = profile && r == 0 ? &prof : nullptr;
    auto sp = speak(m, ids, opt);
    if (!sp.ok()) return fail(sp.error());
    runs.push_back(std::move(*sp));
  }
  std::sort(runs.begin(), runs.end(), [](const Speech& a, const Speech& b) { return a.compute_seconds < b.compute_seconds; });
  const Speech& med = runs[runs.size() / 2];
  // The products' arithmetic at this utterance's frames, beside the f32
  // GEMM rate measured now.
  const ModelGraph* mg = speech_graph(m);
  NamedTensors in;
  Tensor t = Tensor::zeros(DType::I32, {int64_t(ids.size())});
  std::copy(ids.begin(), ids.end(), t.i32());
  in["input_ids"] = t;
  const std::vector<Shape> shapes = shapes_for(*mg->program.graph, in, med.frames);
  const double gflop = graph_gflop(*mg->program.graph, {{kSeqSym, int64_t(ids.size())}}, &shapes);
  const double gemm = measure_gemm_gflops();
  const double rate = med.compute_seconds > 0 ? gflop / med.compute_seconds : 0.0;
  nlohmann::json j = {{"model", m.checkpoint.dir}, {"family", m.family}, {"backend", m.program().backend},
                      {"load_ms", load_ms}, {"ids", ids.size()}, {"frames", med.frames},
                      {"audio_s", med.seconds()}, {"sample_rate", med.sample_rate},
                      {"compute_s", med.compute_seconds}, {"real_time_factor", med.real_time_factor()},
                      {"gflop", gflop}, {"gflop_s", rate}, {"gemm_gflop_s", gemm},
                      {"share_of_gemm", gemm > 0 ? rate / gemm : 0.0},
                      {"peak_rss_mb", peak_rss_mb()}, {"threads", omp_get_max_threads()},
                      {"cpu", cpu_features().describe()}};
  if (profile) j["profile"] = {{"speak", profile_json(prof)}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  print_header(m, load_ms);
  std::printf("  speech          %10.3f s for %.2f s of audio (%zu ids, %lld frames, %d Hz): real-time factor %.3f\n",
              med.compute_seconds, med.seconds(), ids.size(), (long long)med.frames, med.sample_rate,
              med.real_time_factor());
  std::printf("                  %.1f GFLOP at %.0f GFLOP/s, %.0f%% of the %.0f GFLOP/s f32 GEMM rate (oneDNN 1024^3, this run)\n",
              gflop, rate, gemm > 0 ? 100 * rate / gemm : 0.0, gemm);
  std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
  if (repeat > 1) std::printf("  (median of %d runs)\n", repeat);
  if (profile) print_profile("speak", j["profile"]["speak"]);
  return 0;
}

// A text-to-image pipeline folder: the text encoder on a full-length
// prompt and the empty one, `steps` guided steps at the pipeline's size
// (two UNet evaluations each), the VAE's decode; seconds per step, the
// decode's time and the peak memory. A video pipeline likewise, at
// `latent_size` (F,H,W latents; empty: WanPipeline's 81 frames of 480x832).
int bench_pipeline(const Common& c, int steps, bool as_json, const std::string& latent_size) {
  using clock = std::chrono::steady_clock;
  auto secs = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  auto t0 = clock::now();
  auto p = open_pipeline(c);
  if (!p.ok()) return fail(p.error());
  auto t1 = clock::now();
  auto shape = latent_shape(*p);
  if (!shape.ok()) return fail(shape.error());
  if (!latent_size.empty()) {
    // The latents' size as the pixels (and frames) the pipeline makes of them, bounded as imagine bounds them.
    auto v = parse_latent_size(latent_size, shape->size() - 1);
    if (!v.ok()) return fail(v.error());
    const int64_t scale = vae_scale(*p), video = shape->size() == 4;
    const int64_t frames = video ? ((*v)[0] - 1) * vae_temporal_scale(*p) + 1 : 0;
    shape = latent_shape(*p, v->at(v->size() - 2) * scale, v->back() * scale, frames);
    if (!shape.ok()) return fail(shape.error());
  }
  if (Status st = check_loop_size(*shape, steps); !st.ok()) return fail(st.error());  // before any of it is made
  const int64_t length = p->text_encoder->config_int("max_position_embeddings", 77);
  const int64_t vocab = p->text_encoder->config_int("vocab_size", 2);
  std::mt19937 rng(1234);
  ImagineOptions opt;
  opt.steps = steps;
  opt.guidance = 7.5f;
  for (int64_t i = 0; i < length; ++i) opt.ids.push_back(int32_t(rng() % uint32_t(vocab)));
  opt.negative_ids.assign(size_t(length), int32_t(vocab - 1));
  opt.latents = Tensor::zeros(DType::F32, *shape);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < opt.latents.numel(); ++i) opt.latents.f32()[i] = normal(rng);
  auto t2 = clock::now();
  auto r = imagine(*p, opt);
  if (!r.ok()) return fail(r.error());
  auto t3 = clock::now();
  const double text_s = r->text_seconds, vae_s = r->decode_seconds, step_s = r->loop_seconds / steps;
  nlohmann::json j = {{"pipeline", c.model}, {"load_s", secs(t0, t1)}, {"image", dims_str(r->image.shape)},
                      {"steps", steps}, {"guidance", 7.5}, {"text_encode_s", text_s}, {"step_s", step_s},
                      {"vae_decode_s", vae_s}, {"total_s", secs(t2, t3)}, {"peak_rss_mb", peak_rss_mb()},
                      {"threads", omp_get_max_threads()}, {"cpu", cpu_features().describe()}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s (a text-to-%s pipeline, %s backend, %s, %d threads)\n", c.model.c_str(), makes_video(*p) ? "video" : "image", c.path.c_str(),
              j["cpu"].get<std::string>().c_str(), omp_get_max_threads());
  std::printf("  load            %10.2f s\n", secs(t0, t1));
  std::printf("  text encoder    %10.2f s (prompt and negative prompt, %lld tokens each)\n", text_s, (long long)length);
  std::printf("  step            %10.2f s with guidance (two denoiser evaluations), %d steps, output %s\n", step_s, steps,
              dims_str(r->image.shape).c_str());
  std::printf("  VAE decode      %10.2f s\n", vae_s);
  std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
  return 0;
}

}  // namespace

int run_bench(const Common& c, int prompt_tokens, int new_tokens, bool as_json, bool profile, int repeat, int steps,
              double audio_seconds, bool prompt_given, const std::string& latent_size) {
  if (is_pipeline(c.model)) return bench_pipeline(c, steps, as_json, latent_size);
  using clock = std::chrono::steady_clock;
  auto seconds = [](clock::time_point a, clock::time_point b) { return std::chrono::duration<double>(b - a).count(); };
  auto t0 = clock::now();
  auto m = open_model(c);
  if (!m.ok()) return fail(m.error());
  auto t1 = clock::now();
  if (!latent_size.empty() && !(*m)->find_graph("denoise").ok())
    return fail(error("--latent-size is a denoiser's or a pipeline's; " + c.model + " has no denoise graph"));
  if ((*m)->find_graph("denoise").ok())
    return bench_denoiser(**m, 1000 * seconds(t0, t1), as_json, profile, repeat, prompt_given ? prompt_tokens : 77, latent_size);
  if (speech_graph(**m)) return bench_speech(**m, 1000 * seconds(t0, t1), audio_seconds, as_json, profile, repeat);
  if ((*m)->is_encoder_decoder())
    return bench_encoder_decoder(c, **m, 1000 * seconds(t0, t1), prompt_tokens, new_tokens, as_json, profile, repeat);
  if (!(*m)->token_graph()) return bench_encoder(**m, 1000 * seconds(t0, t1), prompt_tokens, as_json, profile, repeat);
  int64_t vocab = (*m)->config_int("vocab_size", 0);
  if (vocab <= 0) return fail(error("bench needs a model with a vocab_size (a decoder)"));
  std::mt19937 rng(1234);
  std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
  for (auto& id : prompt) id = int32_t(rng() % uint32_t(vocab));
  OpProfile prompt_profile, decode_profile;
  struct Run {
    double ttft_s, decode_s;
    long fewer_threads = 0;  // decode steps the governor ran on fewer threads
  };
  const int threads = omp_get_max_threads();  // as configured: the governor may lower it for decode steps
  // One prompt and its decode through a fresh session (fresh KV caches).
  auto run_once = [&]() -> Result<Run> {
    auto started = clock::now();
    Session s(**m, session_options(c, prompt_tokens + new_tokens));
    if (profile) s.profile_with(&prompt_profile);
    ARCH_TRY(auto out, s.step(prompt, {"logits"}, /*last_only=*/true));
    const Tensor& logits = out.at("logits");
    int32_t next = argmax({logits.f32() + (logits.numel() - vocab), size_t(vocab)});
    auto first = clock::now();  // the first token is known: time to first token
    if (profile) s.profile_with(&decode_profile);
    for (int k = 1; k < new_tokens; ++k) {
      ARCH_TRY(auto o, s.step(std::vector<int32_t>{next}, {"logits"}, /*last_only=*/true));
      const Tensor& l = o.at("logits");
      next = argmax({l.f32(), size_t(vocab)});
    }
    return Run{seconds(started, first), seconds(first, clock::now()), s.governor() ? s.governor()->reduced_steps() : 0};
  };
  // The read bandwidth, probed before each run and after the last (the
  // machine's moves within seconds): a run's bound is the larger of the
  // probes beside it. The probe's buffer is no part of the model's peak
  // RSS: the peak so far is read before each probe and the mark reset
  // after it. Where Linux does not allow the reset, there is one probe,
  // after the runs, and every run has it as its bound.
  const int64_t per_token = weight_bytes_per_token((*m)->program());
  const bool bound = per_token > 0 && new_tokens > 1;
  double peak_rss = peak_rss_mb();  // the load's
  const bool between = bound && reset_peak_rss();
  std::vector<double> probes;
  auto probe = [&] {
    omp_set_num_threads(threads);  // every thread, whatever the last decode step ran on
    peak_rss = std::max(peak_rss, peak_rss_mb());
    probes.push_back(probe_bandwidth());
    reset_peak_rss();
  };
  std::vector<Run> runs;
  for (int r = 0; r < std::max(1, repeat); ++r) {
    if (between) probe();
    auto run = run_once();
    if (!run.ok()) return fail(run.error());
    runs.push_back(*run);
  }
  if (bound) probe();
  // The median run of each figure: one slow run on a shared machine does
  // not decide it (--repeat; each run is listed in the JSON).
  auto median = [&](auto field) {
    std::vector<double> v;
    for (const Run& r : runs) v.push_back(field(r));
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  peak_rss = std::max(peak_rss, peak_rss_mb());
  const double ttft = median([](const Run& r) { return r.ttft_s; });
  const double decode_s = median([](const Run& r) { return r.decode_s; });
  nlohmann::json each = nlohmann::json::array();
  std::vector<double> bounds, shares;  // per run
  long fewer_threads = 0;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& r = runs[i];
    const double decode_tok_s = new_tokens > 1 ? (new_tokens - 1) / r.decode_s : 0.0;
    each.push_back({{"ttft_ms", 1000 * r.ttft_s},
                    {"prompt_tok_s", prompt_tokens / r.ttft_s},
                    {"decode_tok_s", decode_tok_s},
                    {"decode_steps_on_fewer_threads", r.fewer_threads}});
    fewer_threads += r.fewer_threads;
    if (!bound) continue;
    const double b = between ? std::max(probes[i], probes[i + 1]) : probes.back();
    bounds.push_back(b);
    shares.push_back(b > 0 ? double(per_token) * decode_tok_s / b : 0.0);
    each.back()["read_bandwidth_gb_s"] = b / 1e9;
    each.back()["decode_share_of_bandwidth"] = shares.back();
  }
  const int64_t kv_per_position = kv_bytes_per_position((*m)->program());
  const int64_t state_bytes = state_bytes_per_sequence((*m)->program());
  nlohmann::json j = {{"model", (*m)->checkpoint.dir},
                      {"family", (*m)->family},
                      {"backend", (*m)->program().backend},
                      {"prompt_tokens", prompt_tokens},
                      {"new_tokens", new_tokens},
                      {"load_ms", 1000 * seconds(t0, t1)},
                      {"ttft_ms", 1000 * ttft},
                      {"prompt_tok_s", prompt_tokens / ttft},
                      {"decode_tok_s", new_tokens > 1 ? (new_tokens - 1) / decode_s : 0.0},
                      {"runs", each},
                      {"peak_rss_mb", peak_rss},
                      {"kv_bytes_per_position", kv_per_position},
                      {"kv_bytes", kv_per_position * (prompt_tokens + new_tokens)},  // the session is sized so
                      {"state_bytes", state_bytes},  // recurrent states: the same at any depth
                      {"fused_matmuls", (*m)->program().plan.merged_nodes},
                      {"folded_adds", (*m)->program().plan.folded_adds},
                      {"fused_glus", (*m)->program().plan.fused_glus},
                      {"fused_activations", (*m)->program().plan.fused_activations},
                      {"threads", threads},
                      {"bf16_activations", c.bf16_activations},
                      {"decode_steps_on_fewer_threads", fewer_threads},
                      {"cpu", cpu_features().describe()}};
  // Decode against the bound memory sets: the weights' bytes per token at
  // the measured decode rate, beside the machine's read bandwidth. The
  // share is the median of the runs' shares, each against its own probes.
  if (bound) {
    auto median_of = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v[v.size() / 2];
    };
    j["weights_per_token_mb"] = double(per_token) / 1e6;
    j["decode_gb_s"] = double(per_token) * j["decode_tok_s"].get<double>() / 1e9;
    j["read_bandwidth_gb_s"] = median_of(bounds) / 1e9;
    j["decode_share_of_bandwidth"] = median_of(shares);
  }
  // A split model: each process's peak, rank 0's first (each holds its
  // share of the weights and caches).
  if ((*m)->mirror) j["peak_rss_mb_per_rank"] = (*m)->mirror->peak_rss_mb(peak_rss);
  if (profile)
    j["profile"] = {{"prompt", profile_json(prompt_profile)},
                    {"decode", profile_json(decode_profile)},
                    {"prompt_blocks", profile_blocks_json(prompt_profile)},
                    {"decode_blocks", profile_blocks_json(decode_profile)}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    const PlanStats& plan = (*m)->program().plan;
    std::printf("%s (%s, %s backend, %s, %d threads; %d matmuls fused into %d, %d adds and %d activations folded "
                "into matmuls, %d gated activations fused)\n",
                j["model"].get<std::string>().c_str(), j["family"].get<std::string>().c_str(),
                j["backend"].get<std::string>().c_str(), j["cpu"].get<std::string>().c_str(), threads,
                plan.merged_nodes, plan.merged_groups, plan.folded_adds, plan.fused_activations, plan.fused_glus);
    std::printf("  load            %10.1f ms\n", j["load_ms"].get<double>());
    std::printf("  prompt %5d    %10.1f tok/s (time to first token %.1f ms)\n", prompt_tokens,
                j["prompt_tok_s"].get<double>(), j["ttft_ms"].get<double>());
    std::printf("  decode %5d    %10.1f tok/s\n", new_tokens, j["decode_tok_s"].get<double>());
    if (runs.size() > 1) std::printf("  (medians of %zu runs; --json lists each)\n", runs.size());
    if (fewer_threads > 0)
      std::printf("  decode ran %ld of its %ld steps on fewer than %d threads: other work held a core (--threads N "
                  "keeps N)\n",
                  fewer_threads, long(runs.size()) * (new_tokens - 1), threads);
    if (has_bf16_matmuls((*m)->program()) && (*m)->program().backend == "cpu" && onednn_has_bf16())
      std::printf(c.bf16_activations
                      ? "  bf16 weights: prompt activations rounded to bf16 (--bf16-activations), as llama.cpp does\n"
                      : "  bf16 weights: prompts kept f32-grade (two bf16 passes); --bf16-activations rounds the "
                        "activations to bf16 as llama.cpp does: one pass, faster, not f32-accurate\n");
    std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
    if (j.contains("peak_rss_mb_per_rank")) {
      std::printf("  peak RSS by rank");
      for (double mb : j["peak_rss_mb_per_rank"]) std::printf(" %.1f", mb);
      std::printf(" MB\n");
    }
    if (j["kv_bytes_per_position"].get<int64_t>() > 0)
      std::printf("  KV cache        %10.1f MB for %d positions (%lld bytes each)\n", j["kv_bytes"].get<int64_t>() / 1e6,
                  prompt_tokens + new_tokens, (long long)j["kv_bytes_per_position"].get<int64_t>());
    if (state_bytes > 0)
      std::printf("  recurrent state %10.1f MB at any depth (convolution windows and delta-rule matrices)\n",
                  state_bytes / 1e6);
    if (j.contains("decode_gb_s"))
      std::printf("  decode reads %.0f MB of weights per token: %.1f GB/s, %.0f%% of the %.1f GB/s this machine "
                  "read (each run against the probes before and after it)\n",
                  j["weights_per_token_mb"].get<double>(), j["decode_gb_s"].get<double>(),
                  100 * j["decode_share_of_bandwidth"].get<double>(), j["read_bandwidth_gb_s"].get<double>());
    if (profile) {
      print_profile("prompt", j["profile"]["prompt"]);
      print_profile("decode", j["profile"]["decode"]);
      print_profile_blocks("prompt", j["profile"]["prompt_blocks"]);
      print_profile_blocks("decode", j["profile"]["decode_blocks"]);
    }
  }
  return 0;
}

}  // namespace arch::cli

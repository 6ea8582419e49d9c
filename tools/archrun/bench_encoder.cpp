// archrun bench on an encoder: a text encoder's sequences per second or a
// vision model's images per second, beside the GEMM rate of the same run.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "engine/runtime/graph_outputs.h"
#include "engine/runtime/text_encoder.h"
#include "kernels/cpu/cpu_features.h"
#include "tools/archrun/bench_graph.h"
#include "tools/archrun/commands.h"
#include "tools/bench/gemm_rate.h"

namespace arch::cli {

int bench_encoder(const Model& m, double load_ms, int tokens, bool as_json, bool profile, int repeat) {
  using clock = std::chrono::steady_clock;
  const ModelGraph& mg = m.main();
  const Graph& graph = mg.graph;
  // One input of each kind the graph takes.
  const int64_t positions = text_positions(m);
  const int64_t seq = positions > 0 ? std::min<int64_t>(tokens, positions) : tokens;
  const int64_t vocab = m.config_int("vocab_size", 0), side = m.config_int("image_size", 224);
  std::mt19937 rng(1234);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  NamedTensors in;
  std::string what;
  bool text = false;
  for (int v : graph.inputs) {
    const Value& val = graph.values[size_t(v)];
    Dims shape;
    for (const Dim& d : val.type.shape) shape.push_back(d.concrete() ? d.n : d.sym == kDynSym ? side : seq);
    Tensor t = Tensor::zeros(val.type.dtype, shape);
    if (val.name == "input_ids" || val.name == "tokens") {
      if (vocab < 1) return fail(error("bench: " + m.checkpoint.dir + " takes token ids but has no vocab_size"));
      for (int64_t i = 0; i < t.numel(); ++i) t.i32()[i] = int32_t(rng() % uint64_t(vocab));
      text = true;
    } else if (val.name == "positions") {
      for (int64_t i = 0; i < t.numel(); ++i) t.i32()[i] = int32_t(i);
    } else if (val.type.dtype == DType::F32) {
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = val.name == "pixel_values" ? 0.5f + 0.2f * normal(rng) : normal(rng);
    }
    in[val.name] = t;
    if (val.name != "positions" && val.name != "token_type_ids") what += (what.empty() ? "" : ", ") + val.name + " " + dims_str(shape);
  }
  // What the run makes: the encoder's states, or a super-resolution's image.
  const std::vector<std::string> names = output_names(graph);
  std::string wanted = names.empty() ? "" : names.back();
  for (const char* preferred : {"reconstruction", "last_hidden_state"})
    if (std::find(names.begin(), names.end(), preferred) != names.end()) wanted = preferred;
  OpProfile prof;
  std::vector<double> runs_s;
  Session s(m);
  const int runs = repeat > 1 ? repeat + 1 : 2;  // a first run fills the session's buffers
  for (int r = 0; r < runs; ++r) {
    if (profile && r > 0) s.profile_with(&prof);
    auto t0 = clock::now();
    auto out = s.run(mg.name(), in, {wanted});
    if (!out.ok()) return fail(out.error());
    auto t1 = clock::now();
    s.profile_with(nullptr);
    if (r > 0) runs_s.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  std::sort(runs_s.begin(), runs_s.end());
  const double sec = runs_s[runs_s.size() / 2];
  const double gemm = measure_gemm_gflops();
  const std::vector<Shape> shapes = shapes_for(*mg.program.graph, in);
  std::map<int, int64_t> bound = {{kSeqSym, seq}};
  const double gflop = graph_gflop(*mg.program.graph, bound, &shapes);
  const char* unit = text ? "sequences_per_s" : "images_per_s";
  nlohmann::json j = {{"model", m.checkpoint.dir},   {"family", m.family},
                      {"backend", m.program().backend}, {"load_ms", load_ms},
                      {"inputs", what},              {"pass_s", sec},
                      {unit, sec > 0 ? 1 / sec : 0.0}, {"gflop", gflop},
                      {"gflop_s", sec > 0 ? gflop / sec : 0.0}, {"gemm_gflop_s", gemm},
                      {"share_of_gemm", sec > 0 && gemm > 0 ? gflop / sec / gemm : 0.0},
                      {"peak_rss_mb", own_peak_rss_mb()}, {"threads", omp_get_max_threads()},
                      {"cpu", cpu_features().describe()}};
  if (profile) j["profile"] = {{"encode", profile_json(prof)}};
  if (as_json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  print_header(m, load_ms);
  std::printf("  pass            %10.4f s for %s: %.1f %s, %.2f GFLOP at %.0f GFLOP/s, %.0f%% of the %.0f GFLOP/s f32 GEMM "
              "rate (oneDNN 1024^3, this run)\n",
              sec, what.c_str(), 1 / sec, text ? "sequences/s" : "images/s", gflop, gflop / sec, 100 * gflop / sec / gemm, gemm);
  std::printf("  peak RSS        %10.1f MB\n", j["peak_rss_mb"].get<double>());
  std::printf("  (median of %zu passes in one session, after a first that fills its buffers)\n", runs_s.size());
  if (profile) print_profile("encode", j["profile"]["encode"]);
  return 0;
}

}  // namespace arch::cli

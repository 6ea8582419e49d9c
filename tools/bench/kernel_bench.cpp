// The kernels' own benchmark (Google Benchmark): the machine's memory
// bandwidth, GEMM peak and arithmetic peaks as the yardsticks, then the cpu
// matmul at decode and prompt shapes for each weight type, as GB/s of
// weight read and GFLOP/s. `build/bench_kernels --benchmark_filter=Gemv`
// runs a part.
//
// Shapes are Qwen2.5-0.5B's (hidden 896, FFN 4864, vocab 151936) and
// Llama-3.2-1B's (hidden 2048, FFN 8192).
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"
#include "kernels/cpu/tiles.h"
#include "engine/core/weight_arena.h"
#include "kernels/kernels.h"
#include "tools/bench/compute_peak.h"
#include "tools/bench/gemm_rate.h"
#include "tools/bench/read_bandwidth.h"

namespace arch {
namespace {

// The yardsticks, measured once before the benchmarks run (best of a few
// passes, the machine being shared): bytes/s, oneDNN's f32 GFLOP/s and the
// instructions' peaks.
struct Yardsticks {
  double bandwidth = 0, gemm_gflops = 0;
  ComputePeaks peaks;
};

Yardsticks& yardsticks() {
  static Yardsticks y;
  return y;
}

// The arithmetic a weight type's kernels run on: f32 FMAs for F32 and F16
// (widened), bf16 dot products for BF16 where the CPU has them, int8 dot
// products for Q8_0 / Q4_0 and the k-quants. 0: none measured.
double compute_peak(WeightForm form) {
  const ComputePeaks& p = yardsticks().peaks;
  if (form.dtype == DType::BF16) return p.bf16 > 0 ? p.bf16 : p.f32;
  if (is_block_quantized(form.dtype)) return p.int8;
  return p.f32;
}

void BM_MemoryRead(benchmark::State& state) {
  const size_t n = size_t(1) << 30;
  const ReadBuffer buf(n);
  uint64_t sink = 0;
  for (auto _ : state) read_pass_seconds(buf, sink);
  benchmark::DoNotOptimize(sink);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}
BENCHMARK(BM_MemoryRead)->Unit(benchmark::kMillisecond)->UseRealTime();

// K-quant rows as a GGUF file holds them (nothing here quantizes to them):
// bytes from a hash, any of which is a valid scale, nibble or bit, and
// each super-block's f16 factors about what a model's weights give.
Tensor random_kquant(DType t, int64_t N, int64_t K) {
  Tensor w = Tensor::zeros(t, {N, K});
  auto* bytes = static_cast<uint8_t*>(w.data);
  for (size_t i = 0; i < w.nbytes(); ++i) bytes[i] = uint8_t(uint32_t(i) * 2654435761u >> 24);
  const uint16_t d = f32_to_f16(2e-3f), dmin = f32_to_f16(1e-3f);
  for (size_t at = 0; at < w.nbytes(); at += kquant_block_bytes(t)) {
    std::memcpy(bytes + at + (t == DType::Q6_K ? 208 : 0), &d, 2);
    if (t != DType::Q6_K) std::memcpy(bytes + at + 2, &dmin, 2);
  }
  return w;
}

Tensor random_weight(WeightForm form, int64_t N, int64_t K) {
  if (is_kquant(form.dtype)) return random_kquant(form.dtype, N, K);
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 0.02f);
  Tensor f = Tensor::zeros(DType::F32, {N, K});
  for (int64_t i = 0; i < N * K; ++i) f.f32()[i] = dist(rng);
  return stored_in(f, form);
}

// The cpu backend's matmul kernel on [M, K] x [N, K]^T.
void run_matmul(benchmark::State& state, WeightForm form, int64_t M, int64_t N, int64_t K) {
  Tensor a = Tensor::zeros(DType::F32, {M, K});
  for (int64_t i = 0; i < M * K; ++i) a.f32()[i] = float((i * 37) % 101) / 101.0f - 0.5f;
  Tensor b = random_weight(form, N, K);
  std::vector<Tensor> inputs{a, b}, outputs{Tensor::zeros(DType::F32, {M, N})};
  std::unique_ptr<OpState> none;
  Attrs attrs = {{"transpose_b", true}};
  std::string where = "bench";
  KernelContext ctx{attrs, inputs, outputs, none, 0, where};
  const Kernel& k = *op_table().kernel("matmul", "cpu");
  for (auto _ : state) {
    Status st = k(ctx);
    if (!st.ok()) state.SkipWithError(st.error().message.c_str());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(b.nbytes()));
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * double(M) * double(N) * double(K) * double(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
  // Shares of the yardsticks: decode is judged by bandwidth, prompts by GEMM peak.
  const Yardsticks& y = yardsticks();
  if (y.bandwidth > 0)
    state.counters["of_bandwidth"] =
        benchmark::Counter(double(b.nbytes()) * double(state.iterations()) / y.bandwidth, benchmark::Counter::kIsRate);
  if (y.gemm_gflops > 0)
    state.counters["of_gemm_peak"] = benchmark::Counter(
        2.0 * double(M) * double(N) * double(K) * double(state.iterations()) / 1e9 / y.gemm_gflops,
        benchmark::Counter::kIsRate);
  if (const double peak = compute_peak(form); peak > 0)
    state.counters["of_compute_peak"] = benchmark::Counter(
        2.0 * double(M) * double(N) * double(K) * double(state.iterations()) / 1e9 / peak,
        benchmark::Counter::kIsRate);
}

void BM_Gemv(benchmark::State& state, WeightForm form) {
  run_matmul(state, form, 1, state.range(0), state.range(1));
}
void BM_Gemm(benchmark::State& state, WeightForm form) {
  run_matmul(state, form, state.range(0), state.range(1), state.range(2));
}

// 1024 x 896 fits the caches (the kernel's own rate); the rest are a
// model's matrices, read from memory.
void decode_shapes(benchmark::internal::Benchmark* b) {
  b->Args({1024, 896})->Args({4864, 896})->Args({896, 4864})->Args({151936, 896})->Args({8192, 2048})->Args({2048, 8192})->Args({128256, 2048});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
void prompt_shapes(benchmark::internal::Benchmark* b) {
  b->Args({512, 4864, 896})->Args({512, 896, 4864})->Args({512, 8192, 2048})->Args({1024, 1024, 1024});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

// A batched decode step's matrices (archrun serve: 4, 16, 64 sequences).
void step_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {4, 16, 64}) b->Args({m, 9728, 896})->Args({m, 896, 4864})->Args({m, 151936, 896})->Args({m, 1152, 896})->Args({m, 896, 896});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}

BENCHMARK_CAPTURE(BM_Gemv, f32, WeightForm{DType::F32})->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, f16, WeightForm{DType::F16})->Apply(decode_shapes);
// bf16, q8 and q4 as a loaded model holds them (tiles of interleaved rows,
// kernels/cpu/tiles.h); the row layout is what MoE experts keep.
BENCHMARK_CAPTURE(BM_Gemv, bf16, (WeightForm{DType::BF16, Tiles::BF16x64}))->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, bf16_rows, WeightForm{DType::BF16})->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, q8, (WeightForm{DType::Q8_0, Tiles::Q8_0x16}))->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, q4, (WeightForm{DType::Q4_0, Tiles::Q4_0x16}))->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, q8_rows, WeightForm{DType::Q8_0})->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, q4_rows, WeightForm{DType::Q4_0})->Apply(decode_shapes);
// K-quant rows (no tiles: as mapped from a GGUF file) at shapes whose K is
// whole super-blocks of 256; all but the first (1024 x 1024, in cache) are
// decode_shapes' too, beside q4 and q4_rows.
void kquant_decode_shapes(benchmark::internal::Benchmark* b) {
  b->Args({1024, 1024})->Args({896, 4864})->Args({8192, 2048})->Args({2048, 8192})->Args({128256, 2048});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK_CAPTURE(BM_Gemv, q4_k, WeightForm{DType::Q4_K})->Apply(kquant_decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, q5_k, WeightForm{DType::Q5_K})->Apply(kquant_decode_shapes);
BENCHMARK_CAPTURE(BM_Gemv, q6_k, WeightForm{DType::Q6_K})->Apply(kquant_decode_shapes);
// f32 at 1024^3 on oneDNN is the machine's GEMM peak as this project sees it.
BENCHMARK_CAPTURE(BM_Gemm, f32, WeightForm{DType::F32})->Apply(prompt_shapes);
BENCHMARK_CAPTURE(BM_Gemm, bf16, (WeightForm{DType::BF16, Tiles::BF16x64}))->Apply(prompt_shapes);  // as loaded: oneDNN's BA16a64b2a
BENCHMARK_CAPTURE(BM_Gemm, f16, WeightForm{DType::F16})->Apply(prompt_shapes);
BENCHMARK_CAPTURE(BM_Gemm, q8, (WeightForm{DType::Q8_0, Tiles::Q8_0x16}))->Apply(prompt_shapes);
BENCHMARK_CAPTURE(BM_Gemm, q4, (WeightForm{DType::Q4_0, Tiles::Q4_0x16}))->Apply(prompt_shapes);
BENCHMARK_CAPTURE(BM_Gemm, f32_step, WeightForm{DType::F32})->Apply(step_shapes);
BENCHMARK_CAPTURE(BM_Gemm, q8_step, (WeightForm{DType::Q8_0, Tiles::Q8_0x16}))->Apply(step_shapes);
BENCHMARK_CAPTURE(BM_Gemm, q4_step, (WeightForm{DType::Q4_0, Tiles::Q4_0x16}))->Apply(step_shapes);
// K-quants: prompts (bf16 slabs for oneDNN, or the AVX2 integer kernel)
// and batched steps, at prompt_shapes' and step_shapes' whole super-blocks.
void kquant_prompt_shapes(benchmark::internal::Benchmark* b) {
  b->Args({512, 896, 4864})->Args({512, 8192, 2048})->Args({1024, 1024, 1024});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
void kquant_step_shapes(benchmark::internal::Benchmark* b) {
  for (int64_t m : {4, 8, 16, 32, 64}) b->Args({m, 896, 4864})->Args({m, 8192, 2048});
  b->Unit(benchmark::kMicrosecond)->UseRealTime();
}
BENCHMARK_CAPTURE(BM_Gemm, q4_k, WeightForm{DType::Q4_K})->Apply(kquant_prompt_shapes);
BENCHMARK_CAPTURE(BM_Gemm, q6_k, WeightForm{DType::Q6_K})->Apply(kquant_prompt_shapes);
BENCHMARK_CAPTURE(BM_Gemm, q4_k_step, WeightForm{DType::Q4_K})->Apply(kquant_step_shapes);

// The matmuls of one decode step of the Qwen2.5-0.5B shape in a model's
// order, each its own kernel call: 24 layers of the fused QKV (1152 rows),
// output (896), fused gate/up (9728) and down (896 x 4864) projections,
// then the tied output projection (151936). Weights as a loaded model holds
// them (tiles, in the weight arena's 2 MiB pages), every one a separate
// matrix so that none is read from cache. GB/s of weights: what decode's
// matmuls reach with a model's matrix sizes, apart from its other ops
// (`archrun bench --profile` shows those).
// Values from a hash, not the normal distribution: half a billion of them.
Tensor arena_weight(WeightForm form, int64_t N, int64_t K) {
  Tensor f = Tensor::zeros(DType::F32, {N, K});
  for (int64_t i = 0; i < N * K; ++i) f.f32()[i] = float(int64_t(uint32_t(i) * 2654435761u >> 24) - 128) / 6400.0f;
  const Tensor w = stored_in(f, form);
  Tensor out = weight_zeros(w.dtype, w.shape, w.layout);
  std::memcpy(out.data, w.data, w.nbytes());
  return out;
}

// reused_layer: every layer multiplies by layer 0's four matrices (3.4 MB
// as q4, held in the last-level cache), so that a batched step's integer
// work is timed apart from streaming its weights from memory.
void decode_step_matmuls(benchmark::State& state, WeightForm form, bool reused_layer) {
  struct Shape {
    int64_t N, K;
  };
  std::vector<Shape> shapes;
  for (int l = 0; l < 24; ++l)
    for (Shape s : {Shape{1152, 896}, Shape{896, 896}, Shape{9728, 896}, Shape{896, 4864}}) shapes.push_back(s);
  shapes.push_back({151936, 896});
  // Made once per type: Google Benchmark calls this several times to
  // settle on an iteration count.
  static std::map<WeightForm, std::vector<Tensor>> made;
  std::vector<Tensor>& weights = made[form];
  if (weights.empty())
    for (const Shape& s : shapes) weights.push_back(arena_weight(form, s.N, s.K));
  size_t bytes = 0;
  for (const Tensor& w : weights) bytes += w.nbytes();
  // M rows: one step of M sequences decoding together (archrun serve's
  // batched step), every matrix read once for all of them.
  const int64_t M = state.range(0);
  Tensor x896 = Tensor::zeros(DType::F32, {M, 896}), x4864 = Tensor::zeros(DType::F32, {M, 4864});
  for (int64_t i = 0; i < M * 896; ++i) x896.f32()[i] = float(i % 13) / 13.0f - 0.5f;
  for (int64_t i = 0; i < M * 4864; ++i) x4864.f32()[i] = float(i % 11) / 11.0f - 0.5f;
  std::vector<std::vector<Tensor>> inputs, outputs;
  double flop = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const size_t w = reused_layer && i + 1 < shapes.size() ? i % 4 : i;
    inputs.push_back({shapes[i].K == 896 ? x896 : x4864, weights[w]});
    outputs.push_back({Tensor::zeros(DType::F32, {M, shapes[i].N})});
    flop += 2.0 * double(M) * double(shapes[i].N) * double(shapes[i].K);
  }
  std::unique_ptr<OpState> none;
  Attrs attrs = {{"transpose_b", true}};
  std::string where = "bench";
  const Kernel& k = *op_table().kernel("matmul", "cpu");
  for (auto _ : state)
    for (size_t i = 0; i < shapes.size(); ++i) {
      KernelContext ctx{attrs, inputs[i], outputs[i], none, 0, where};
      Status st = k(ctx);
      if (!st.ok()) state.SkipWithError(st.error().message.c_str());
    }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
  state.counters["GFLOP/s"] = benchmark::Counter(flop * double(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
  // Tokens a second: M per step.
  state.counters["tok/s"] = benchmark::Counter(double(M) * double(state.iterations()), benchmark::Counter::kIsRate);
  const Yardsticks& yd = yardsticks();
  if (yd.bandwidth > 0 && !reused_layer)  // reused: the layers' bytes come from cache, no share of memory's rate
    state.counters["of_bandwidth"] =
        benchmark::Counter(double(bytes) * double(state.iterations()) / yd.bandwidth, benchmark::Counter::kIsRate);
  if (const double peak = compute_peak(form); peak > 0)
    state.counters["of_compute_peak"] =
        benchmark::Counter(flop * double(state.iterations()) / 1e9 / peak, benchmark::Counter::kIsRate);
}
void BM_DecodeStepMatmuls(benchmark::State& state, WeightForm form) { decode_step_matmuls(state, form, false); }
void BM_DecodeStepMatmulsOneLayer(benchmark::State& state, WeightForm form) { decode_step_matmuls(state, form, true); }
// Rows 1 (decode), then 4, 16 and 64 sequences stepping together.
void step_rows(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(4)->Arg(16)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK_CAPTURE(BM_DecodeStepMatmuls, q4, (WeightForm{DType::Q4_0, Tiles::Q4_0x16}))->Apply(step_rows);
BENCHMARK_CAPTURE(BM_DecodeStepMatmuls, q8, (WeightForm{DType::Q8_0, Tiles::Q8_0x16}))->Apply(step_rows);
BENCHMARK_CAPTURE(BM_DecodeStepMatmuls, bf16, (WeightForm{DType::BF16, Tiles::BF16x64}))->Apply(step_rows);
BENCHMARK_CAPTURE(BM_DecodeStepMatmulsOneLayer, q4, (WeightForm{DType::Q4_0, Tiles::Q4_0x16}))->Apply(step_rows);

// A tensor of normal(0, 1) values drawn from rng.
Tensor normal_values(Dims shape, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  Tensor t = Tensor::zeros(DType::F32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = dist(rng);
  return t;
}

// The cpu attention, causal, Qwen2.5-0.5B's heads (14 query heads, 2 kv
// heads, head_dim 64): S queries over T keys (S = T: a prompt; S = 1: a
// decode step at depth T).
void BM_Attention(benchmark::State& state) {
  const int64_t S = state.range(0), T = state.range(1), H = 14, KH = 2, D = 64;
  std::mt19937 rng(1);
  std::vector<Tensor> inputs{normal_values({S, H, D}, rng), normal_values({T, KH, D}, rng),
                             normal_values({T, KH, D}, rng)};
  std::vector<Tensor> outputs{Tensor::zeros(DType::F32, {S, H, D})};
  std::unique_ptr<OpState> none;
  Attrs attrs = {{"causal", true}};
  std::string where = "bench";
  KernelContext ctx{attrs, inputs, outputs, none, 0, where};
  const Kernel& k = *op_table().kernel("attention", "cpu");
  for (auto _ : state) {
    Status st = k(ctx);
    if (!st.ok()) state.SkipWithError(st.error().message.c_str());
  }
  // Multiply-adds of q.k and p v over the keys each query sees.
  const double pairs = double(S) * double(T) - double(S) * double(S - 1) / 2;
  state.counters["GFLOP/s"] = benchmark::Counter(4.0 * pairs * double(H * D) * double(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Attention)->Args({512, 512})->Args({1, 16})->Args({1, 128})->Args({1, 512})->Args({1, 4096})->Unit(benchmark::kMicrosecond)->UseRealTime();

// The cpu attention on each layer's inputs in turn, as a decode step
// takes its layers (`rows` set: several sequences' rows, a batched step):
// time per layer; `kv_bytes` of cache read a call, as bytes/s and as a
// share of the memory read yardstick.
void time_layers(benchmark::State& state, const std::vector<std::vector<Tensor>>& inputs, std::vector<Tensor>& outputs,
                 bool causal, const SequenceRows* rows, double kv_bytes) {
  std::unique_ptr<OpState> none;
  Attrs attrs = {{"causal", causal}};
  std::string where = "bench";
  const Kernel& k = *op_table().kernel("attention", "cpu");
  size_t layer = 0;
  for (auto _ : state) {
    KernelContext ctx{attrs, inputs[layer], outputs, none, 0, where, &kDefaultKernelOptions, rows};
    Status st = k(ctx);
    if (!st.ok()) state.SkipWithError(st.error().message.c_str());
    layer = (layer + 1) % inputs.size();
  }
  state.SetBytesProcessed(int64_t(kv_bytes * double(state.iterations())));
  if (const double bw = yardsticks().bandwidth; bw > 0)
    state.counters["of_bandwidth"] =
        benchmark::Counter(kv_bytes * double(state.iterations()) / bw, benchmark::Counter::kIsRate);
}

// One decode step's attention over T keys in each of 24 layers, the
// layers' caches taken in turn as a model does (0.5B shape: 14/2 heads,
// head_dim 64): past about 512 keys they no longer fit the caches, so this
// measures attention as decoding deep into a context meets it, memory
// included. Time per layer; the second argument 1 keeps the caches as F16
// (--kv-f16).
// `layers` caches of T keys, each read in turn by one decode query.
void attention_layers(benchmark::State& state, int64_t layers, int64_t T, int64_t H, int64_t KH, bool causal,
                      bool f16) {
  const int64_t D = 64;
  std::mt19937 rng(5);
  auto cache = [&](Dims shape) {
    return f16 ? convert_to(normal_values(shape, rng), DType::F16) : normal_values(shape, rng);
  };
  std::vector<std::vector<Tensor>> inputs;
  for (int64_t l = 0; l < layers; ++l)
    inputs.push_back({normal_values({1, H, D}, rng), cache({T, KH, D}), cache({T, KH, D})});
  std::vector<Tensor> outputs{Tensor::zeros(DType::F32, {1, H, D})};
  time_layers(state, inputs, outputs, causal, nullptr, 2.0 * double(T * KH * D) * (f16 ? 2 : 4));
}

void BM_AttentionLayers(benchmark::State& state) {
  attention_layers(state, 24, state.range(0), 14, 2, true, state.range(1) != 0);
}
BENCHMARK(BM_AttentionLayers)
    ->ArgsProduct({{512, 2048, 4096}, {0, 1}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A batched decode step's attention (archrun serve): `seqs` sequences of
// T keys each, one query row apiece, in their slots of one cache [seqs x
// cap, 2, 64] per layer, `layers` layers in turn (0.5B shape: 24, the
// caches read from memory; 1: from the caches), the sequences shared out
// over the threads as a batched step runs them. Time per layer.
void BM_StepAttention(benchmark::State& state) {
  const int64_t seqs = state.range(0), T = state.range(1), H = 14, KH = 2, D = 64, layers = state.range(2), cap = 512;
  std::mt19937 rng(7);
  std::vector<std::vector<Tensor>> inputs;
  for (int64_t l = 0; l < layers; ++l)
    inputs.push_back({normal_values({seqs, H, D}, rng), normal_values({seqs * cap, KH, D}, rng),
                      normal_values({seqs * cap, KH, D}, rng)});
  std::vector<Tensor> outputs{Tensor::zeros(DType::F32, {seqs, H, D})};
  SequenceRows rows;
  rows.slot_capacity = cap;
  for (int64_t s = 0; s < seqs; ++s) rows.pieces.push_back({s, T - 1, s, 1});
  time_layers(state, inputs, outputs, true, &rows, 2.0 * double(seqs * T * KH * D) * 4);
}
BENCHMARK(BM_StepAttention)
    ->Args({16, 192, 24})
    ->Args({16, 448, 24})
    ->Args({1, 192, 1})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// A whisper-base decode step's cross-attention: 6 layers, each one query
// over the 1500 encoder positions' keys and values held from the window
// (8 heads, no grouping, not causal): 37 MB read per step, bound by memory.
void BM_CrossAttentionLayers(benchmark::State& state) { attention_layers(state, 6, 1500, 8, 8, false, false); }
BENCHMARK(BM_CrossAttentionLayers)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace arch

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  auto& y = arch::yardsticks();
  y.bandwidth = arch::read_bandwidth(size_t(1) << 30, 5);
  y.gemm_gflops = arch::measure_gemm_gflops();
  y.peaks = arch::measure_compute_peaks();
  std::printf("yardsticks: memory read %.1f GB/s, oneDNN f32 GEMM 1024^3 %.1f GFLOP/s (%d threads); "
              "of_bandwidth and of_gemm_peak below are shares of these\n",
              y.bandwidth / 1e9, y.gemm_gflops, omp_get_max_threads());
  std::printf("arithmetic peaks: f32 FMA %.1f GFLOP/s, bf16 dot %.1f GFLOP/s, int8 dot %.1f GOP/s (0: not on "
              "this CPU); of_compute_peak is a share of the one a weight type's kernels run on\n",
              y.peaks.f32, y.peaks.bf16, y.peaks.int8);
  benchmark::AddCustomContext("memory_read_GBps", std::to_string(y.bandwidth / 1e9));
  benchmark::AddCustomContext("gemm_f32_GFLOPps", std::to_string(y.gemm_gflops));
  benchmark::AddCustomContext("peak_f32_fma_GFLOPps", std::to_string(y.peaks.f32));
  benchmark::AddCustomContext("peak_bf16_dot_GFLOPps", std::to_string(y.peaks.bf16));
  benchmark::AddCustomContext("peak_int8_dot_GOPps", std::to_string(y.peaks.int8));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

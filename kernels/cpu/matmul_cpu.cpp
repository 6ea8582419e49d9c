// The cpu backend's matmul, by the weight's stored type and the number of
// activation rows M:
//   - many rows (prompts): oneDNN (2.6's v2 API: desc, then
//     primitive_desc(desc, attr, engine)), primitives cached per shape with
//     M in buckets: F32 as is; BF16 through a two-term split of the
//     activations (f32-grade), read in rows or, as loaded, in 64-row tiles
//     that are oneDNN's BA16a64b2a layout; F16 widened to f32 and Q8_0 /
//     Q4_0 / k-quant (Q4_K, Q5_K, Q6_K) rows dequantized to bf16, a slab
//     of rows at a time; Q8_0 / Q4_0 in 16-row tiles (as loaded) in
//     integers on the tiles (quant_interleaved_gemm.cpp on VNNI,
//     quant_interleaved_avx2.cpp on AVX2);
//   - a few rows (decode): F32/F16 rows widened in registers (gemv_hwy.cpp);
//     BF16 tiles on AVX-512 BF16 (gemv_bf16_avx512.cpp); Q8_0 / Q4_0 with
//     the activations quantized per block and integer dot products
//     (quant_interleaved_dot.cpp on the 16-row tiles make_program gives
//     them, quant_dot.cpp on rows, as MoE experts keep them); k-quant rows
//     likewise, the activations quantized per 256 values (kquant_dot.h);
//     rows of the weight split across threads.
// The planner may give it a third input to add (a bias or a residual).
// Checked against the reference kernel by the goldens on this path.
#include <immintrin.h>
#include <omp.h>

// GCC 12 sees _mm512_cvtph_ps's own undefined start value as uninitialised
// once inlined (widen_f16_avx512): no such read.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <dnnl.hpp>

#include "engine/core/kquant.h"
#include "engine/core/quant.h"
#include "kernels/cpu/kquant_dot.h"
#include "kernels/cpu/tiles.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/cpu/share_out.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/gemv.h"
#include "kernels/cpu/onednn_scratchpad.h"
#include "kernels/cpu/quant_dot.h"
#include "kernels/reference/shape_rules.h"

namespace arch {

namespace {

using dt = dnnl::memory::data_type;

// Rows of activations up to which a weight row loaded once serves them all
// (the decode path); beyond it F32 weights go to oneDNN.
constexpr int64_t kGemvRows = 4;
// Rows up to which a matmul is a decode step's (one sequence's or a batched
// step's): a stream over weights read once, its rows shared out on the team.
constexpr int64_t kStepRows = 64;
constexpr size_t kMaxPrimitives = 512;
// Rows up to which k-quant rows (which have no tiles) take the integer
// kernel rather than bf16 slabs for oneDNN: 4-row passes over the weights
// against one dequantization of them all. A batched step, both threads,
// 896 x 4864 and 8192 x 2048 Q4_K: 8 rows 240 / 934 us against 684 / 2237
// in slabs, 16 rows 462 / 1820 against 786 / 2408, 32 rows 1045 / 3903
// against 923 / 2691.
constexpr int64_t kKQuantIntegerRows = 16;

// C [M, N] = A [M, K] @ B, B stored [N, K] (transpose_b) or [K, N].
struct MatmulPrimitive {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul prim;
};

// (M, K, N, transpose_b, operand type, accumulate into C, C's row stride,
// B as BF16x64 tiles, threads): a primitive keeps the team size it was
// made for, and the thread governor may run a session's prompts on fewer.
using PrimitiveKey = std::tuple<int64_t, int64_t, int64_t, bool, dt, bool, int64_t, bool, int>;

struct OneDnn {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  std::mutex lock;
  std::map<PrimitiveKey, MatmulPrimitive> primitives;

  MatmulPrimitive& primitive(int64_t M, int64_t K, int64_t N, bool tb, dt type, bool accumulate, int64_t ldc,
                             bool tiles) {
    auto key = std::make_tuple(M, K, N, tb, type, accumulate, ldc, tiles, omp_get_max_threads());
    auto it = primitives.find(key);
    if (it != primitives.end()) return it->second;
    // One per shape, M in buckets (run() splits M into bucket-sized runs);
    // a run-time M would lose oneDNN's brgemm kernels. Never without end,
    // whatever the shapes.
    if (primitives.size() >= kMaxPrimitives) primitives.clear();
    MatmulPrimitive p;
    p.a = dnnl::memory::desc({M, K}, type, {K, 1});
    // BF16x64 tiles are oneDNN's own BA16a64b2a layout of B [K, N], which
    // its brgemm kernels read as they are.
    p.b = tiles ? dnnl::memory::desc({K, N}, type, dnnl::memory::format_tag::BA16a64b2a)
                : dnnl::memory::desc({K, N}, type, tb ? dnnl::memory::dims{1, K} : dnnl::memory::dims{N, 1});
    p.c = dnnl::memory::desc({M, N}, dt::f32, {ldc, 1});
    dnnl::primitive_attr attr;
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), user_scratchpad(attr), engine);
    p.scratch = pd.scratchpad_desc();
    p.prim = dnnl::matmul(pd);
    return primitives.emplace(key, std::move(p)).first->second;
  }

  // M rows in bucket-sized runs, each on its own rows of A and C (500 =
  // 480 + 20): no padding, no copies, and a bounded set of shapes.
  void run(int64_t M, int64_t K, int64_t N, bool tb, dt type, bool accumulate, const void* a, const void* b, void* c,
           int64_t ldc, bool tiles) {
    ldc = ldc ? ldc : N;
    const size_t a_row = size_t(K) * (type == dt::f32 ? 4 : 2);
    while (M > 0) {
      const int64_t rows = m_bucket(M);
      execute(rows, K, N, tb, type, accumulate, a, b, c, ldc, tiles);
      a = static_cast<const uint8_t*>(a) + size_t(rows) * a_row;
      c = static_cast<float*>(c) + rows * ldc;
      M -= rows;
    }
  }

 private:
  // The largest bucket up to M: multiples of an eighth of M's power of two
  // (8 per octave); up to 32, every M.
  static int64_t m_bucket(int64_t M) {
    if (M <= 32) return M;
    int64_t step = 1;
    while (step * 16 <= M) step *= 2;
    return M / step * step;
  }

  void execute(int64_t M, int64_t K, int64_t N, bool tb, dt type, bool accumulate, const void* a, const void* b,
               void* c, int64_t ldc, bool tiles) {
    MatmulPrimitive& p = primitive(M, K, N, tb, type, accumulate, ldc, tiles);
    dnnl::stream stream(engine);
    dnnl::memory am(p.a, engine, const_cast<void*>(a)), bm(p.b, engine, const_cast<void*>(b)), cm(p.c, engine, c);
    p.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm},
                            {DNNL_ARG_SCRATCHPAD, scratchpad(p.scratch, engine)}});
    stream.wait();
  }
};

OneDnn& onednn() {
  static OneDnn d;
  return d;
}

// One oneDNN matmul, its errors as the kernel's: C [M, N] (row stride ldc,
// 0: N) = A [M, K] @ B, both of `type`; `accumulate` adds to C.
Status onednn_matmul(KernelContext& ctx, int64_t M, int64_t K, int64_t N, bool tb, dt type, bool accumulate,
                     const void* a, const void* b, void* c, int64_t ldc = 0, bool tiles = false) {
  OneDnn& d = onednn();
  try {
    std::lock_guard<std::mutex> guard(d.lock);
    d.run(M, K, N, tb, type, accumulate, a, b, c, ldc, tiles);
  } catch (const dnnl::error& e) {
    return kernel_error(ctx, "matmul", std::string("oneDNN: ") + e.what());
  }
  return {};
}

// This thread's scratch buffer of n elements, kept across calls (nothing
// is allocated per token once warm). A plain pointer is returned so worker
// threads see this thread's buffer, not a thread_local of their own.
template <typename T>
T* scratch(std::vector<T>& buffer, int64_t n) {
  buffer.resize(size_t(n));
  return buffer.data();
}

// Activations as bf16, hi = their rounding and (lo not null) lo = the
// rounding of the rest, rows in parallel.
void activations_bf16(const float* a, int64_t M, int64_t K, uint16_t* hi, uint16_t* lo) {
  parallel_for(M, M * K >= (1 << 16),
               [&](int64_t m) { split_bf16(a + m * K, K, hi + m * K, lo ? lo + m * K : nullptr); });
}

// BF16 weights, many rows: oneDNN's bf16 dot products (f32 accumulation)
// need bf16 activations, and rounding them would cost the goldens'
// accuracy. So each activation is split a = hi + lo, both bf16 (hi its
// rounding, lo the rounding of the rest), and C = hi B + lo B: the products
// are exact in f32 and what is lost is below 2^-16 of |a|, f32-grade.
// `tiles`: the weight is in BF16x64 tiles (oneDNN's BA16a64b2a), else rows.
Status matmul_onednn_bf16(KernelContext& ctx, int64_t M, int64_t K, int64_t N, bool tiles = false) {
  const bool split = !ctx.options->bf16_activations;
  thread_local std::vector<uint16_t> hi_buffer, lo_buffer;
  uint16_t* hi = scratch(hi_buffer, M * K);
  uint16_t* lo = split ? scratch(lo_buffer, M * K) : nullptr;
  activations_bf16(ctx.inputs[0].f32(), M, K, hi, lo);
  const void* w = ctx.inputs[1].data;
  void* c = ctx.outputs[0].data;
  ARCH_TRY_STATUS(onednn_matmul(ctx, M, K, N, true, dt::bf16, false, hi, w, c, N, tiles));
  if (split) ARCH_TRY_STATUS(onednn_matmul(ctx, M, K, N, true, dt::bf16, true, lo, w, c, N, tiles));
  return {};
}

// Decode's unit of weight rows (share_out): about an eighth of a thread's
// share, whole pairs of `align`-row tiles (the GEMM's 2 tiles a pass).
int64_t decode_unit(int64_t N, int64_t align) {
  const int64_t pair = 2 * align, threads = omp_get_max_threads();
  return std::max<int64_t>(pair, (N / (threads * 8) + pair - 1) / pair * pair);
}

// Splits the N weight rows across threads; chunks start at multiples of
// `align` rows (an interleaved tile's rows).
//
// Decode and a batched step (up to 64 rows: a stream over weights read
// once per step): share_out, each thread its own contiguous share first
// (the tiles it prefetches ahead are its own next ones), then the others'
// last units. Before, one share a thread (two for up to 4 rows) left a
// thread slowed by anything else the cores ran to be waited for: in a
// served 16-stream step the team's first thread spent 14% of its time
// waiting at the matmuls' ends (perf, Zen 5). BM_DecodeStepMatmuls, two
// threads, repetitions interleaved at random in one run: q4/16 20.0-23.1
// -> 18.3-20.0 ms median on a slow run, 17.3 -> 17.0 on a fast one; q4/8
// 14.6 -> 12.8; q4/1 7.12 -> 6.86; q8/1 11.99 -> 11.48; bf16/1 19.5 ->
// 19.0. Prompts: cache-sized chunks of 32 columns handed out dynamically.
// first(t, team), where given, runs on every thread before any chunk (all
// of it on one thread where the rows are not shared out).
template <typename F, typename First = void (*)(int, int)>
void for_row_chunks(int64_t M, int64_t N, int64_t K, F&& run, int64_t align = 4, First&& first = [](int, int) {}) {
  const int threads = omp_get_max_threads();
  if (threads == 1 || N * K < (1 << 15)) {
    first(0, 1);
    run(0, N);
    return;
  }
  if (M <= kStepRows) {
    const int64_t unit = decode_unit(N, align);
    share_out((N + unit - 1) / unit, [&](int64_t u) { run(u * unit, std::min(N, (u + 1) * unit)); }, first);
    return;
  }
  first(0, 1);
  const int64_t chunk = std::max<int64_t>(align, (32 + align - 1) / align * align);
  const int64_t chunks = (N + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c) run(c * chunk, std::min(N, (c + 1) * chunk));
}

__attribute__((target("avx512f"))) void widen_f16_avx512(const uint16_t* in, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  for (; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

void widen_f16(const uint16_t* in, int64_t n, float* out) {
  if (cpu_features().avx512) return widen_f16_avx512(in, n, out);
  for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(in[i]);
}

// Weights oneDNN can't take as stored, many rows: a cache-sized slab of
// weight rows at a time is converted into `type` (convert(n, rows, dst)
// writes rows n.., `unit` of them or the last few) and multiplied by
// oneDNN's kernels for that type, straight into its columns of C. The slab
// is reused across calls.
template <typename T, typename Convert>
Status matmul_in_slabs(KernelContext& ctx, int64_t M, int64_t K, int64_t N, dt type, const void* a, int64_t unit,
                       Convert&& convert) {
  int64_t slab = std::max<int64_t>(64, std::min<int64_t>(N, (int64_t(1) << 21) / int64_t(sizeof(T)) / K));
  slab = (slab + unit - 1) / unit * unit;
  thread_local std::vector<T> w_buffer;
  T* w = scratch(w_buffer, slab * K);
  float* out = ctx.outputs[0].f32();
  for (int64_t n0 = 0; n0 < N; n0 += slab) {
    const int64_t rows = std::min(slab, N - n0);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r += unit) convert(n0 + r, std::min(unit, rows - r), w + r * K);
    ARCH_TRY_STATUS(onednn_matmul(ctx, M, K, rows, true, type, false, a, w, out + n0, N));
  }
  return {};
}

// BF16 weights in 64-row tiles (BF16x64, kernels/cpu/tiles.h):
// prompts are oneDNN's two f32-grade bf16 passes (one with
// --bf16-activations) straight on the tiles, which are its BA16a64b2a
// layout; decode runs the tile kernel on the split activations
// (gemv_bf16_avx512.cpp). Only CPUs with AVX-512 BF16 get tiles
// (matmul_takes). The tiles are that layout only where K is a multiple of
// 32: oneDNN pads each tile's K to one, the tiles hold K values exactly,
// so from the second tile on oneDNN would read at the wrong place (Phi-3's
// golden, K = 80, gave garbage prompts); such a K runs the tile kernel.
Status matmul_bf16x64(KernelContext& ctx, int64_t M, int64_t K, int64_t N) {
  if (!has_avx512_bf16_dot()) return kernel_error(ctx, "matmul", "BF16x64 tiles need a CPU with AVX-512 BF16");
  if (M > kGemvRows && K % 32 == 0) return matmul_onednn_bf16(ctx, M, K, N, true);
  const auto* w = static_cast<const uint8_t*>(ctx.inputs[1].data);
  float* out = ctx.outputs[0].f32();
  thread_local std::vector<uint16_t> hi_buffer, lo_buffer;
  uint16_t* hi = scratch(hi_buffer, M * K);
  uint16_t* lo = scratch(lo_buffer, M * K);
  split_bf16(ctx.inputs[0].f32(), M * K, hi, lo);
  for_row_chunks(
      M, N, K, [&](int64_t n0, int64_t n1) { gemv_bf16x64_split(hi, lo, M, K, w, K, n0, n1, out, N); }, 64);
  return {};
}

// K-quant rows (Q4_K, Q5_K, Q6_K as a GGUF file maps them) with the
// activations quantized per 256 values and integer dot products
// (kquant_dot.h): decode and batched steps up to kKQuantIntegerRows, and
// prompts where oneDNN has no bf16 but the CPU has AVX2 (prompts with
// bf16 take the slabs below, as Q4_0 rows do).
Status matmul_kquant(KernelContext& ctx, int64_t M, int64_t K, int64_t N) {
  thread_local KQuantActs buffer;
  KQuantActs& acts = buffer;  // a plain reference: the worker threads read this thread's buffer
  const DType wt = ctx.inputs[1].dtype;
  quantize_kquant_acts(ctx.inputs[0].f32(), M, K, K, wt, acts);
  const auto* w = static_cast<const uint8_t*>(ctx.inputs[1].data);
  float* y = ctx.outputs[0].f32();
  for_row_chunks(M, N, K, [&](int64_t n0, int64_t n1) { kquant_gemv(acts, w, wt, n0, n1, y, N); });
  return {};
}

Status matmul_product(KernelContext& ctx) {
  const Tensor& A = ctx.inputs[0];
  const Tensor& B = ctx.inputs[1];
  Tensor& C = ctx.outputs[0];
  const bool tb = attr_bool(ctx.attrs, "transpose_b", true);
  if (A.dtype != DType::F32 || B.shape.size() != 2 || A.shape.empty() || C.dtype != DType::F32 ||
      (B.dtype != DType::F32 && !tb))
    return kernel_error(ctx, "matmul", "the cpu matmul takes F32 a [..., K] and a 2-d b (stored [N, K] unless F32)");
  const int64_t K = A.dim(-1), M = A.numel() / std::max<int64_t>(K, 1);
  const int64_t N = tb ? B.dim(0) : B.dim(1);
  if ((tb ? B.dim(1) : B.dim(0)) != K || C.numel() != M * N)
    return kernel_error(ctx, "matmul", "shapes a " + dims_str(A.shape) + ", b " + dims_str(B.shape) + " disagree");
  if (is_kquant(B.dtype) && K % kSuperBlock != 0)
    return kernel_error(ctx, "matmul", std::string(dtype_name(B.dtype)) + " rows of " + std::to_string(K) +
                                           " values: not whole super-blocks of 256");
  if (M == 0 || N == 0) return {};
  const bool many = M > kGemvRows;
  // Tiles first: a tiled matrix keeps its stored dtype (BF16, Q8_0, Q4_0).
  if (tiles_of(B) == Tiles::BF16x64) return matmul_bf16x64(ctx, M, K, N);
  if (B.dtype == DType::F32 && (many || !tb))
    return onednn_matmul(ctx, M, K, N, tb, dt::f32, false, A.data, B.data, C.data);
  if (B.dtype == DType::BF16 && many && onednn_has_bf16()) return matmul_onednn_bf16(ctx, M, K, N);
  if ((B.dtype == DType::F16 || B.dtype == DType::BF16) && many) {
    // oneDNN 2.6 has no f16 matmul here, nor bf16 before AVX-512: widened
    // exactly to f32.
    const auto* w16 = static_cast<const uint16_t*>(B.data);
    const bool f16 = B.dtype == DType::F16;
    return matmul_in_slabs<float>(ctx, M, K, N, dt::f32, A.data, 1, [&](int64_t n, int64_t, float* dst) {
      if (f16) return widen_f16(w16 + n * K, K, dst);
      for (int64_t k = 0; k < K; ++k) dst[k] = bf16_to_f32(w16[n * K + k]);
    });
  }
  const bool interleaved = is_tiled(B);  // Q8_0x16 / Q4_0x16 from here
  const auto* wq = static_cast<const uint8_t*>(B.data);
  // Prompts on rows (MoE experts keep them; so does every matrix on CPUs
  // without AVX2), compute-bound: dequantized to bf16 for oneDNN's bf16
  // kernels, the activations rounded to bf16. Without those (before
  // AVX-512), the AVX2 integer kernel below beats f32 slabs (0.5B q4, 64
  // tokens: 124 against 36 tok/s); with neither, f32 slabs.
  // K-quant rows stay on the integer kernel for steps of at most 16 rows
  // (kKQuantIntegerRows); a larger step goes to the bf16 slabs whole.
  const bool kquant_ints = is_kquant(B.dtype) && M <= kKQuantIntegerRows && cpu_features().avx2;
  if (is_block_quantized(B.dtype) && many && !interleaved && !kquant_ints &&
      (onednn_has_bf16() || !cpu_features().avx2)) {
    const size_t row_bytes = quant_row_bytes(B.dtype, K);
    if (!onednn_has_bf16())
      return matmul_in_slabs<float>(ctx, M, K, N, dt::f32, A.data, 1, [&](int64_t n, int64_t, float* dst) {
        dequantize_row(B.dtype, wq + size_t(n) * row_bytes, K, dst);
      });
    thread_local std::vector<uint16_t> a_buffer;
    uint16_t* a16 = scratch(a_buffer, M * K);
    activations_bf16(A.f32(), M, K, a16, nullptr);
    return matmul_in_slabs<uint16_t>(ctx, M, K, N, dt::bf16, a16, 1, [&](int64_t n, int64_t, uint16_t* dst) {
      dequantize_row_bf16(B.dtype, wq + size_t(n) * row_bytes, K, dst);
    });
  }
  if (is_kquant(B.dtype)) return matmul_kquant(ctx, M, K, N);
  if (is_quantized(B.dtype)) {
    thread_local QuantizedActs buffer;
    QuantizedActs& acts = buffer;  // a plain reference: the worker threads read this thread's buffer
    // Tiles take the activations in natural order; Q4_0 rows on VNNI reorder them.
    // A batched step's rows are quantized by the team in the region that
    // multiplies them: a 16-row step's 73 quantizations of 896 values a
    // row (below parallel_for's bound) were the first thread's while the
    // others waited.
    const DType order = interleaved ? DType::Q8_0 : B.dtype;
    const bool in_region = M > kGemvRows && M <= kStepRows;
    if (in_region) prepare_acts(M, K, acts, order);
    else quantize_acts(A.f32(), M, K, K, acts, order);
    for_row_chunks(
        M, N, K,
        [&](int64_t n0, int64_t n1) {
          // Tiles: one row is a stream from memory (the gemv); from two
          // rows on, the GEMM's passes of 4 rows over each tile read it once.
          if (interleaved && M > 1) interleaved_gemm(acts, wq, tiles_of(B), n0, n1, C.f32(), N);
          else if (interleaved) interleaved_gemv(acts, wq, tiles_of(B), n0, n1, C.f32(), N);
          else quant_gemv(acts, wq, B.dtype, n0, n1, C.f32(), N);
        },
        interleaved ? kInterleave : 4, [&](int t, int team) {
          if (in_region) quantize_act_rows(A.f32(), K, M * t / team, M * (t + 1) / team, acts);
        });
    return {};
  }
  if (B.dtype == DType::BF16 && has_avx512_bf16_dot()) {
    thread_local std::vector<uint16_t> hi_buffer, lo_buffer;
    uint16_t* hi = scratch(hi_buffer, M * K);
    uint16_t* lo = scratch(lo_buffer, M * K);
    split_bf16(A.f32(), M * K, hi, lo);
    for_row_chunks(M, N, K, [&](int64_t n0, int64_t n1) {
      gemv_bf16_split(hi, lo, M, K, static_cast<const uint16_t*>(B.data), K, n0, n1, C.f32(), N);
    });
    return {};
  }
  for_row_chunks(M, N, K, [&](int64_t n0, int64_t n1) {
    gemv(GemvArgs{A.f32(), M, K, B.data, B.dtype, K, n0, n1, C.f32(), N});
  });
  return {};
}

// The product, then what the planner folded in, in place, row by row (one
// pass over the output): the addend (a bias [N] or a residual of the
// output's shape), then the activation. No second op, no intermediate value.
Status matmul_cpu(KernelContext& ctx) {
  ARCH_TRY_STATUS(matmul_product(ctx));
  const Tensor* add = ctx.inputs.size() >= 3 && ctx.inputs[2].data ? &ctx.inputs[2] : nullptr;
  const Attrs& act_attr = attr_json(ctx.attrs, "activation");
  const std::string act = act_attr.is_string() ? act_attr.get<std::string>() : "";
  if (!add && act.empty()) return {};
  Tensor& C = ctx.outputs[0];
  const int64_t N = C.shape.empty() ? 1 : C.shape.back(), M = C.numel() / std::max<int64_t>(N, 1);
  if (add && (add->dtype != DType::F32 || (add->numel() != N && add->numel() != M * N)))
    return kernel_error(ctx, "matmul", "add " + dims_str(add->shape) + " is neither an F32 bias [" +
                                           std::to_string(N) + "] nor the output's shape");
  if (!act.empty() && !apply_activation(act, nullptr, 0))
    return kernel_error(ctx, "matmul", "activation '" + act + "' has no cpu kernel");
  const int64_t stride = add && add->numel() != N ? N : 0;
  const float* a = add ? add->f32() : nullptr;
  float* c = C.f32();
  parallel_for(M, M * N >= (1 << 16), [&](int64_t m) {
    float* row = c + m * N;
    if (a)
      for (int64_t n = 0; n < N; ++n) row[n] += a[m * stride + n];
    if (!act.empty()) apply_activation(act, row, N);
  });
  return {};
}

}  // namespace

// Asked once by making one.
bool onednn_has_bf16() {
  static const bool yes = [] {
    try {
      dnnl::memory::desc a({4, 16}, dt::bf16, {16, 1}), b({16, 16}, dt::bf16, {1, 16}), c({4, 16}, dt::f32, {16, 1});
      dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), onednn().engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return yes;
}

namespace {

// Strided products (attention's heads read where they lie): one primitive
// per shape, strides and scale.
using StridedKey = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, bool, float, int>;

struct StridedPrimitive {
  dnnl::memory::desc a, b, c, scratch;
  dnnl::matmul prim;
};

struct StridedPrimitives {
  std::mutex lock;
  std::map<StridedKey, StridedPrimitive> cache;
};

StridedPrimitives& strided_primitives() {
  static StridedPrimitives p;
  return p;
}

}  // namespace

Status matmul_strided_f32(int64_t M, int64_t K, int64_t N, const float* a, int64_t lda, const float* b, int64_t ldb,
                          bool b_rows_are_n, float* c, int64_t ldc, float scale, const std::string& where) {
  StridedPrimitives& sp = strided_primitives();
  OneDnn& d = onednn();
  try {
    std::lock_guard<std::mutex> guard(sp.lock);
    auto key = std::make_tuple(M, K, N, lda, ldb, ldc, b_rows_are_n, scale, omp_get_max_threads());
    auto it = sp.cache.find(key);
    if (it == sp.cache.end()) {
      if (sp.cache.size() >= kMaxPrimitives) sp.cache.clear();
      StridedPrimitive p;
      p.a = dnnl::memory::desc({M, K}, dt::f32, {lda, 1});
      // B [K, N]: stored as N rows of K (b_rows_are_n: a Linear weight, or
      // keys) or K rows of N (values).
      p.b = dnnl::memory::desc({K, N}, dt::f32, b_rows_are_n ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
      p.c = dnnl::memory::desc({M, N}, dt::f32, {ldc, 1});
      dnnl::primitive_attr attr;
      if (scale != 1.0f) attr.set_output_scales(0, {scale});
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(p.a, p.b, p.c), user_scratchpad(attr), d.engine);
      p.scratch = pd.scratchpad_desc();
      p.prim = dnnl::matmul(pd);
      it = sp.cache.emplace(key, std::move(p)).first;
    }
    StridedPrimitive& p = it->second;
    dnnl::stream stream(d.engine);
    dnnl::memory am(p.a, d.engine, const_cast<float*>(a)), bm(p.b, d.engine, const_cast<float*>(b)),
        cm(p.c, d.engine, c);
    p.prim.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm},
                            {DNNL_ARG_SCRATCHPAD, scratchpad(p.scratch, d.engine)}});
    stream.wait();
  } catch (const dnnl::error& e) {
    return error(where + ": strided matmul: oneDNN: " + e.what());
  }
  return {};
}

Status matmul_rows(const Tensor& a, const Tensor& w, Tensor& out, const std::string& where) {
  std::vector<Tensor> inputs{a, w}, outputs{out};
  std::unique_ptr<OpState> none;
  static const Attrs attrs = {{"transpose_b", true}};
  KernelContext ctx{attrs, inputs, outputs, none, 0, where};
  return matmul_cpu(ctx);
}

namespace {

bool matmul_takes(const Attrs& attrs, size_t input, DType stored) {
  if (input != 1 || !attr_bool(attrs, "transpose_b", true)) return false;
  return stored == DType::BF16 || stored == DType::F16 || is_block_quantized(stored);
}

// The prepare-weight hook: which weights the kernels read in tiles. BF16
// tiles pay only with the AVX-512 BF16 kernels; elsewhere BF16 stays in
// rows (Highway's widening gemv, oneDNN or f32 slabs for prompts). Integer
// tiles likewise only with VNNI or AVX2 (the portable loop over tiles is
// for tests; rows run it faster).
// Rows still in the checkpoint's mapping (F32, F16, BF16 without tiles,
// the k-quants' rows, as bytes) are copied onto 2 MiB pages, packed one
// after another: decode streams every one per token, and the mapping's
// 4 KiB pages held matrices of 1-10 MiB to 55-65% of the read bandwidth.
// f32 decode on Zen 5, alternated: whisper-base 166-184 -> 211-254 tok/s,
// t5-base 76-92 -> 106-125, the 0.5B shape 17-27 -> 26-37; the load copies
// the weights (t5-base 0.2-0.6 -> 0.6-1.1 s), the peak RSS stays (pages
// released as each is copied).
uint8_t matmul_layout(const Attrs& attrs, size_t input, const Tensor& stored) {
  if (input != 1 || !attr_bool(attrs, "transpose_b", true) || stored.shape.size() != 2 || stored.layout) return 0;
  if (tiles_pay(stored.dtype, stored.dim(1))) return uint8_t(tiles_for(stored.dtype));
  return stored.mapped ? kResidentRows : 0;
}

}  // namespace


Tolerance quantized_check_tolerance(const Tolerance& op, std::span<const Tensor> inputs) {
  Tolerance t = op;
  for (const Tensor& in : inputs)
    if (in.data && is_block_quantized(in.dtype)) t.rel = std::max(t.rel, 2e-2);
  return t;
}

void register_cpu_matmul(OpTable& t) {
  t.add_kernel("matmul", "cpu", matmul_cpu, matmul_takes, quantized_check_tolerance, /*fills=*/true);
  t.add_weight_layout("matmul", "cpu", matmul_layout);
}

}  // namespace arch

// The cpu backend: fast kernels registered against the reference ops (the
// interpreter falls back to the reference kernel for any op without one).
// Threads: every kernel parallelises with OpenMP, the same libgomp pool
// oneDNN runs on, so the two never oversubscribe the cores.
#pragma once

#include <span>
#include <string>

#include "engine/core/op.h"

namespace arch {

void register_cpu_kernels(OpTable& t);  // all of the below

// Two choices a model is loaded with (KernelOptions, engine/core/op.h; per
// program, not process-wide):
// - bf16_activations: prompt-sized matmuls with BF16 weights round their
//   activations to bf16 (one pass of oneDNN's bf16 kernels, as llama.cpp
//   does) instead of the two-term split that keeps f32-grade accuracy.
//   Faster, but no longer within the goldens' float32 tolerance; off unless
//   asked for (archrun --bf16-activations).
// - kv_f16: the KV cache keeps its rows as F16 (half the memory; rows
//   rounded to 11 significant bits) instead of F32 (archrun --kv-f16). A
//   session's cache keeps the type it started with, and refuses rows of the
//   other.
// Whether oneDNN has a bf16 matmul on this CPU (2.6: AVX-512 and up).
// Where it has not, BF16 prompts widen the weights to f32 and
// --bf16-activations changes nothing.
bool onednn_has_bf16();

// --check's bound for a kernel reading a block-quantized weight: its
// activations are quantized to int8 per block as well (the reference
// widens the weight and keeps f32 activations), which moves a dot product
// by up to about 1% of its largest term; 2% of max|ref|.
Tolerance quantized_check_tolerance(const Tolerance& op, std::span<const Tensor> inputs);

// out [M, N] = a [M, K] @ w^T, w [N, K] in any type the cpu matmul reads
// (what routed_matmul runs per expert).
Status matmul_rows(const Tensor& a, const Tensor& w, Tensor& out, const std::string& where);

// c [M, N] (row stride ldc) = scale * a [M, K] (row stride lda) @ B [K, N],
// B stored as N rows of K (b_rows_are_n: b[n * ldb + k]) or as K rows of N
// (b[k * ldb + n]); f32, oneDNN.
Status matmul_strided_f32(int64_t M, int64_t K, int64_t N, const float* a, int64_t lda, const float* b, int64_t ldb,
                          bool b_rows_are_n, float* c, int64_t ldc, float scale, const std::string& where);

// softmax_hwy.cpp: log(sum(exp(x))) (-inf for none), vectorized: a
// vocabulary's log-softmax denominator (logprobs) in a small share of
// what scalar exp takes.
double log_sum_exp(std::span<const float> x);

// attention_hwy.cpp: rows of x [rows, n] in place: x + bias (where given,
// [rows, n]), then exp(x - the row's max); inv_sum[r] = 1 / the row's sum.
void exp_rows(float* x, int64_t rows, int64_t n, const float* bias, float* inv_sum);

// attention_dense.cpp: unmasked attention over long sequences as two
// matmuls per head and a softmax between (where ..._fits says it pays);
// bias [H, S, T] or null.
bool attention_by_matmul_fits(int64_t S, int64_t T, bool causal, int64_t window, float softcap, DType kv);
Status attention_by_matmul(const Tensor& Q, const Tensor& K, const Tensor& V, const float* bias, float scale,
                           Tensor& out, const std::string& where);

void register_cpu_matmul(OpTable& t);      // matmul_cpu.cpp: oneDNN, gemv, quantized dot
void register_cpu_experts(OpTable& t);     // experts_cpu.cpp: stack, routed_matmul on stored weights
void register_cpu_embed(OpTable& t);       // embed_cpu.cpp: rows of BF16/F16/quantized tables
void register_cpu_norms(OpTable& t);       // norms_hwy.cpp: rms_norm, layer_norm
void register_cpu_activations(OpTable& t); // activations_hwy.cpp: silu, gelu, gelu_tanh, ...
// x[i] = op(x[i]) in place for an activation the vector code has (silu,
// gelu, gelu_tanh, quick_gelu, relu, sigmoid, tanh); false for any other.
bool apply_activation(const std::string& op, float* x, int64_t n);
void register_cpu_softmax(OpTable& t);     // softmax_hwy.cpp
void register_cpu_rope(OpTable& t);        // rope_hwy.cpp: rope, and rotary over given tables
void register_cpu_attention(OpTable& t);   // attention_hwy.cpp: over the KV cache, online softmax
void register_cpu_kv_cache(OpTable& t);    // kv_cache_cpu.cpp: F32 rows, or F16 with --kv-f16
void register_cpu_conv1d(OpTable& t);      // conv1d_cpu.cpp: conv1d and conv_transpose1d through oneDNN
void register_cpu_group_norm(OpTable& t);  // group_norm_cpu.cpp: the reference's groups on the threads
void register_cpu_conv2d(OpTable& t);      // conv2d_cpu.cpp: 1x1 as one product, else unfolded rows through it
void register_cpu_conv3d(OpTable& t);      // conv3d_cpu.cpp: 1x1x1 as one product, else each output frame's unfolded rows
void register_cpu_gated_delta_rule(OpTable& t);  // gated_delta_rule_cpu.cpp: the recurrence, prompts by chunks
void register_cpu_causal_conv1d(OpTable& t);     // causal_conv1d_cpu.cpp: across channels, prompts row by row

}  // namespace arch

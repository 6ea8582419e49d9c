// The reference ops: plain float32 loops, one op (or one small family) per
// file, each defining its inputs, attributes, shape rule, tolerance and
// kernel in one place. These are the truth the fast kernels are checked
// against; they match Hugging Face transformers' float32 eager code.
#pragma once

#include <string_view>

#include "engine/core/op.h"

namespace arch {

// Every reference op, in one call (kernels/kernels.cpp builds op_table()).
void define_reference_ops(OpTable& t);

void define_embed(OpTable& t);        // embed
void define_matmul(OpTable& t);       // matmul
void define_binary(OpTable& t);       // add sub mul div
void define_constant(OpTable& t);     // constant
void define_activations(OpTable& t);  // silu gelu gelu_tanh quick_gelu relu sigmoid softplus tanh exp sqrt neg ceil leaky_relu
void define_glu(OpTable& t);          // glu
void define_rms_norm(OpTable& t);     // rms_norm
void define_layer_norm(OpTable& t);   // layer_norm
void define_softmax(OpTable& t);      // softmax
void define_rope(OpTable& t);         // rope
void define_attention(OpTable& t);    // attention
void define_kv_cache(OpTable& t);     // kv_cache (its state: KvCache, kv_cache.h)
void define_reshape(OpTable& t);      // reshape
void define_flatten(OpTable& t);      // flatten reshape_as
void define_topk(OpTable& t);         // topk
void define_routed_matmul(OpTable& t);  // routed_matmul
void define_reduce(OpTable& t);       // sum mean
void define_stack(OpTable& t);        // stack
void define_concat(OpTable& t);       // concat
void define_slice(OpTable& t);        // slice
void define_select(OpTable& t);       // select
void define_transpose(OpTable& t);    // transpose
void define_cast(OpTable& t);         // cast
void define_round(OpTable& t);        // round
void define_sinusoids(OpTable& t);    // timestep_embedding sincos_2d
void define_group_norm(OpTable& t);   // group_norm
void define_upsample(OpTable& t);     // upsample_nearest
void define_patchify(OpTable& t);    // patchify unpatchify patch_ids
void define_rope_axes(OpTable& t);    // rope_axes_tables rotary
void define_pad(OpTable& t);          // pad clamp
void define_l2_normalize(OpTable& t);  // l2_normalize
void define_batch_norm(OpTable& t);   // batch_norm
void define_conv1d(OpTable& t);       // conv1d
void define_conv_transpose1d(OpTable& t);  // conv_transpose1d
void define_conv2d(OpTable& t);       // conv2d
void define_conv3d(OpTable& t);       // conv3d
void define_time_shuffle(OpTable& t); // time_shuffle
void define_space_time_depth(OpTable& t);  // space_time_to_depth depth_to_space_time
void define_pool(OpTable& t);         // max_pool2d avg_pool2d
void define_arange(OpTable& t);       // arange
void define_gather(OpTable& t);       // gather
void define_one_hot(OpTable& t);      // one_hot
void define_relative_position_bucket(OpTable& t);  // relative_position_bucket
void define_log_bucket_position(OpTable& t);       // log_bucket_position
void define_resize(OpTable& t);                    // resize
void define_windows(OpTable& t);   // window_partition, window_reverse, shifted_window_mask, window_coords, window_relative_index
void define_pixel_shuffle(OpTable& t);             // pixel_shuffle
void define_flip(OpTable& t);         // flip
void define_cumsum(OpTable& t);       // cumsum
void define_expand_by_durations(OpTable& t);  // expand_by_durations
void define_spline(OpTable& t);       // rational_quadratic_spline
void define_normal_noise(OpTable& t);  // normal_noise
void define_relative_attention(OpTable& t);  // relative_attention
void define_causal_conv1d(OpTable& t);  // causal_conv1d (its state: RecurrentState, recurrent_state.h)
void define_gated_delta_rule(OpTable& t);  // gated_delta_rule (its state: RecurrentState)
void define_place_rows(OpTable& t);   // place_rows
void define_token_runs(OpTable& t);   // token_runs
void define_collectives(OpTable& t);  // all_reduce all_gather (engine/core/collectives.h)

// The reference function of a unary activation by op name (null if none):
// what glu applies to its gate.
float (*reference_activation(std::string_view name))(float);

}  // namespace arch

#include "kernels/reference/ops.h"

namespace arch {

void define_reference_ops(OpTable& t) {
  define_embed(t);
  define_matmul(t);
  define_binary(t);
  define_constant(t);
  define_activations(t);
  define_glu(t);
  define_rms_norm(t);
  define_layer_norm(t);
  define_softmax(t);
  define_rope(t);
  define_attention(t);
  define_kv_cache(t);
  define_reshape(t);
  define_flatten(t);
  define_topk(t);
  define_routed_matmul(t);
  define_reduce(t);
  define_stack(t);
  define_concat(t);
  define_slice(t);
  define_select(t);
  define_transpose(t);
  define_cast(t);
  define_round(t);
  define_sinusoids(t);
  define_group_norm(t);
  define_upsample(t);
  define_patchify(t);
  define_rope_axes(t);
  define_pad(t);
  define_l2_normalize(t);
  define_batch_norm(t);
  define_conv1d(t);
  define_conv_transpose1d(t);
  define_conv2d(t);
  define_conv3d(t);
  define_time_shuffle(t);
  define_space_time_depth(t);
  define_pool(t);
  define_arange(t);
  define_gather(t);
  define_one_hot(t);
  define_relative_position_bucket(t);
  define_log_bucket_position(t);
  define_resize(t);
  define_windows(t);
  define_pixel_shuffle(t);
  define_flip(t);
  define_cumsum(t);
  define_expand_by_durations(t);
  define_spline(t);
  define_normal_noise(t);
  define_relative_attention(t);
  define_causal_conv1d(t);
  define_gated_delta_rule(t);
  define_place_rows(t);
  define_token_runs(t);
  define_collectives(t);
}

}  // namespace arch

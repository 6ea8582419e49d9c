#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/tiles.h"

namespace arch {

void register_cpu_kernels(OpTable& t) {
  cpu_features();  // any ARCHETYPE_CPU cap reaches Highway and oneDNN before they run
  register_cpu_tiles();  // the tile layouts the matmul and embed kernels prepare weights in
  register_cpu_matmul(t);
  register_cpu_experts(t);
  register_cpu_embed(t);
  register_cpu_norms(t);
  register_cpu_activations(t);
  register_cpu_softmax(t);
  register_cpu_rope(t);
  register_cpu_attention(t);
  register_cpu_kv_cache(t);
  register_cpu_conv1d(t);
  register_cpu_conv2d(t);
  register_cpu_conv3d(t);
  register_cpu_group_norm(t);
  register_cpu_gated_delta_rule(t);
  register_cpu_causal_conv1d(t);
}

}  // namespace arch

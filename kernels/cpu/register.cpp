#include "kernels/cpu/cpu_kernels.h"

namespace arch {

void register_cpu_kernels(OpTable& t) {
  register_cpu_matmul(t);
  register_cpu_experts(t);
  register_cpu_embed(t);
  register_cpu_norms(t);
  register_cpu_activations(t);
  register_cpu_softmax(t);
  register_cpu_rope(t);
  register_cpu_attention(t);
}

}  // namespace arch

#include "kernels/kernels.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/reference/ops.h"

namespace arch {

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
    define_reference_ops(t);
    register_cpu_kernels(t);
    return t;
  }();
  return table;
}

}  // namespace arch

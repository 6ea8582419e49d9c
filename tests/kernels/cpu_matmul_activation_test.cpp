// The cpu matmul with what the planner folds in (a bias, then an
// activation) against the reference, each activation the vector code has.
#include "tests/kernels/cpu_test_util.h"

namespace arch::test {
namespace {

TEST(CpuMatmul, FoldedActivationsMatchTheReference) {
  Tensor a = f32({37, 48}, scaled_values(37 * 48, 1, 1.0f));
  Tensor w = f32({40, 48}, scaled_values(40 * 48, 2, 0.2f));
  Tensor bias = f32({40}, scaled_values(40, 3, 1.0f));
  for (const char* act : {"gelu", "gelu_tanh", "relu", "silu", "quick_gelu", "sigmoid", "tanh"})
    expect_cpu_matches_reference("matmul", {a, w, bias}, {{"transpose_b", true}, {"activation", act}}, act);
}

}  // namespace
}  // namespace arch::test

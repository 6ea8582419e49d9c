// The planner on a real template with biases: Qwen2's q, k and v biases
// follow the merged projection's slices and fold into it, as do both
// residual adds of each layer, so no add is left in the program. The
// goldens themselves (decoder_golden_test) check the numbers on this path.
#include <gtest/gtest.h>

#include "engine/runtime/model.h"
#include "tests/golden/golden_case.h"

namespace arch {
namespace {

TEST(PlannerGolden, Qwen2BiasesAndResidualsFoldIntoMatmuls) {
  std::string golden = testing::golden_dir("qwen2");
  ARCH_REQUIRE_SHARED(golden);
  auto model = load_model(golden);
  ASSERT_TRUE(model.ok()) << model.error().message;
  const Program& p = (*model)->program();
  // 2 layers: 3 biases and 2 residual adds each.
  EXPECT_EQ(p.plan.folded_adds, 10);
  int adds = 0, biased = 0;
  for (const Node& n : p.graph->nodes) {
    adds += n.op == "add";
    biased += n.op == "matmul" && n.inputs.size() == 3 && n.inputs[2] >= 0;
  }
  EXPECT_EQ(adds, 0);
  EXPECT_EQ(biased, 2 * 3);  // q+k+v, o_proj (residual) and down_proj (residual) per layer
  EXPECT_EQ(p.plan.fused_glus, 2);  // silu(gate) * up, one per layer
}

}  // namespace
}  // namespace arch

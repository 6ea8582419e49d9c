// --check (seeds/002's check=True): each step a fast kernel ran is compared
// with its op's reference kernel on the same inputs; the first miss is
// named, and steps that ran the reference kernel itself are counted as
// skipped, never as passed.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/runtime/model.h"
#include "tests/engine/runtime/toy_model.h"
#include "kernels/reference/ops.h"

namespace arch {
namespace {

std::shared_ptr<Model> toy() { return testing::load_toy(3, "reference"); }

Result<std::map<int, Tensor>> run_with(const Model& m, const OpTable& ops, const std::string& backend,
                                       CheckStats* stats) {
  ARCH_TRY(Program p, make_program(m.graph(), ops, m.program().weights, backend));
  RunState state;
  state.max_context = 3;
  state.check = stats;
  state.ops = &ops;
  Tensor tokens = Tensor::zeros(DType::I32, {3}), positions = Tensor::zeros(DType::I32, {3});
  for (int i = 0; i < 3; ++i) tokens.i32()[i] = 5 + i, positions.i32()[i] = i;
  return run_program(p, state, {{m.graph().find_input("tokens"), tokens}, {m.graph().find_input("positions"), positions}},
                     3, 3, {});
}

TEST(Check, AFastKernelWithinToleranceIsCountedAndAWrongOneIsNamed) {
  auto m = toy();
  ASSERT_TRUE(m);
  // A "fast" matmul that is the reference one plus a small error.
  OpTable ops;
  define_reference_ops(ops);
  Kernel reference = *ops.kernel("matmul", "reference");
  float error = 0;
  ops.add_kernel("matmul", "test", [&](KernelContext& ctx) -> Status {
    ARCH_TRY_STATUS(reference(ctx));
    for (int64_t i = 0; i < ctx.outputs[0].numel(); ++i) ctx.outputs[0].f32()[i] += error;
    return {};
  });
  CheckStats ok;
  ASSERT_TRUE(run_with(*m, ops, "test", &ok).ok());
  // 7 matmuls per layer, of which the planner fuses q, k, v into one and
  // gate, up into one: 4 per layer x 2 layers + the lm_head.
  EXPECT_EQ(ok.checked, 9);
  EXPECT_GT(ok.skipped, 0);   // everything else ran the reference kernel itself

  error = 1e-2f;
  CheckStats bad;
  auto r = run_with(*m, ops, "test", &bad);
  ASSERT_FALSE(r.ok());
  // The fused projection is named for the values it computes.
  EXPECT_EQ(r.error().message.rfind(
                "layers.0.qkv.q+layers.0.qkv.k+layers.0.qkv.v: max abs err 0.01 > tol", 0),
            0u)
      << r.error().message;
  EXPECT_NE(r.error().message.find("matmul, test kernel vs reference"), std::string::npos) << r.error().message;
  EXPECT_EQ(bad.checked, 0);
}

}  // namespace
}  // namespace arch

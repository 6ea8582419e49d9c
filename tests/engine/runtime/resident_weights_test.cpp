// Weights a cpu kernel streams whole on every call are copied out of the
// checkpoint's mapping onto the weight arena's huge pages at load
// (kResidentRows); the reference path keeps them mapped. Same bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/kernels.h"
#include "engine/runtime/model.h"
#include "tests/engine/runtime/toy_model.h"

namespace arch {
namespace {

TEST(ResidentWeights, TheCpuMatmulsF32RowsLeaveTheMappingWithTheirBytes) {
  auto ref = testing::load_toy(11, "reference");
  ASSERT_TRUE(ref);
  const Program& mapped = ref->program();
  auto cpu = make_program(*mapped.graph, op_table(), mapped.weights, "cpu", /*plan=*/false);
  ASSERT_TRUE(cpu.ok()) << cpu.error().message;
  int copied = 0;
  for (const Node& node : cpu->graph->nodes) {
    if (node.op != "matmul" || node.inputs.size() < 2) continue;
    const int w = node.inputs[1];
    const Tensor& before = mapped.weights[size_t(w)];
    const Tensor& after = cpu->weights[size_t(w)];
    if (!before.data || before.dtype != DType::F32 || !before.mapped) continue;
    EXPECT_FALSE(after.mapped) << cpu->graph->values[size_t(w)].name;
    EXPECT_NE(after.data, before.data);
    ASSERT_EQ(after.nbytes(), before.nbytes());
    EXPECT_EQ(std::memcmp(after.data, before.data, before.nbytes()), 0) << cpu->graph->values[size_t(w)].name;
    ++copied;
  }
  EXPECT_GT(copied, 0) << "the toy's projections are mapped F32: each should have been copied";
  // The reference program's own weights stay where the file is.
  for (const Node& node : mapped.graph->nodes)
    if (node.op == "matmul" && mapped.weights[size_t(node.inputs[1])].data) {
      EXPECT_TRUE(mapped.weights[size_t(node.inputs[1])].mapped);
    }
}

}  // namespace
}  // namespace arch

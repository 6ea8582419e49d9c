// Weight binding: every weight the graph reads, found in the checkpoint by
// name, its shape checked against the template's declaration.
#pragma once

#include <string>
#include <vector>

#include "engine/graph.h"
#include "engine/tensor.h"
#include "importer/checkpoint.h"

namespace arch {

struct BoundWeights {
  std::vector<Tensor> by_value;             // indexed by value id
  std::vector<std::string> unused;          // checkpoint tensors nothing reads
};

// The reference path computes in float32: F16/BF16 tensors are widened once
// here, F32 ones are used in place (mapped, not copied).
Result<BoundWeights> bind_weights(const Graph& g, const Checkpoint& ckpt);

}  // namespace arch

// Weight binding: every weight the graph reads, found in the checkpoint by
// name, its shape checked against the template's declaration.
#pragma once

#include <string>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"
#include "importer/checkpoint.h"

namespace arch {

struct BoundWeights {
  std::vector<Tensor> by_value;             // indexed by value id
  std::vector<std::string> unused;          // checkpoint tensors nothing reads
};

// Tensors are bound as stored (mapped, not copied); make_program widens to
// F32 those its kernels can't read in their stored type.
Result<BoundWeights> bind_weights(const Graph& g, const Checkpoint& ckpt);

}  // namespace arch

// Weight binding: every weight the graph reads, found in the checkpoint by
// name, its shape checked against the template's declaration.
#pragma once

#include <string>
#include <vector>

#include "engine/core/graph.h"
#include "engine/core/tensor.h"
#include "importer/checkpoint/checkpoint.h"

namespace arch {

// Tensors are bound as stored (mapped, not copied), by value id;
// make_program widens to F32 those its kernels can't read in their stored
// type.
Result<std::vector<Tensor>> bind_weights(const Graph& g, const Checkpoint& ckpt);

// The checkpoint's tensors that none of `graphs` (one template's) reads, by name.
std::vector<std::string> unread_tensors(const std::vector<const Graph*>& graphs, const Checkpoint& ckpt);

}  // namespace arch

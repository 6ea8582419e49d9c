// The host reference under the NPU2 numerics: the step graph as the
// template wrote it, with a `round` op wherever the lowered program stores
// a narrower type than f32 (each bound weight, each unit's output as its
// buffer keeps it). The reference kernels then compute what the engine's
// units compute, so greedy tokens from the two agree exactly.
#pragma once

#include "engine/core/graph.h"
#include "engine/npu2/program.h"

namespace arch::npu2 {

Result<Graph> apply_numerics(const Graph& step, const Program& p);

}  // namespace arch::npu2

// archrun generate on the NPU2 engine's terms: --backend npu2 (the lowered
// program on the emulator of its units) and --numerics npu2 (the host
// reference rounding where the program stores bf16).
#pragma once

#include <functional>

#include "core/graph.h"
#include "tools/archrun/commands.h"

namespace arch::cli {

// The graph rewrite that makes the host reference compute under the NPU2
// numerics: lowered (at `max_context` positions), then rounded as the
// program stores; a refusal is an error naming it.
GraphRewrite npu2_numerics(const GenerateArgs& a, int64_t max_context);

}  // namespace arch::cli

// archrun generate on the NPU2 engine's terms: --backend npu2 (the lowered
// program on the emulator of its units) and --numerics npu2 (the host
// reference rounding where the program stores bf16).
#pragma once

#include "tools/archrun/commands.h"

namespace arch::cli {

}  // namespace arch::cli

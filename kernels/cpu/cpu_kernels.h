// The cpu backend: fast kernels registered against the reference ops (the
// interpreter falls back to the reference kernel for any op without one).
#pragma once

#include "engine/op.h"

namespace arch {

void register_cpu_kernels(OpTable& t);

}  // namespace arch

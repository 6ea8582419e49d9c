// The op table every tool uses: each reference op defined (kernels/reference),
// fast backends' kernels registered on top.
#pragma once

#include "engine/core/op.h"

namespace arch {

const OpTable& op_table();

}  // namespace arch

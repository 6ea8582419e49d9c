// Storage for weights rewritten at load (a backend's tiles, merged
// matrices): packed one after another in large blocks that ask the kernel
// for 2 MiB pages. Decode streams every weight once a token; with 4 KiB
// pages that is a TLB miss every 4 KiB, and small matrices each on their own
// allocation would never fill a huge page.
#pragma once

#include "engine/core/tensor.h"

namespace arch {

// A zero-filled tensor in the weight arena. Its block lives as long as any
// tensor in it; a block no tensor holds any more is returned to the system.
// `layout`: a backend's arrangement (Tensor::layout), which sizes it.
Tensor weight_zeros(DType dtype, Dims shape, uint8_t layout = 0);

// `t`'s bytes, dtype, shape and layout, in the weight arena.
Tensor weight_copy(const Tensor& t);

}  // namespace arch

// conv3d's attributes and output size, shared by its reference kernel and
// the cpu backend's (kernels/cpu/conv3d_cpu.cpp).
#pragma once

#include <cstdint>

#include "engine/core/op.h"

namespace arch {

struct Conv3dAttrs {
  int64_t stride[3] = {1, 1, 1};          // t, h, w
  int64_t pad[6] = {0, 0, 0, 0, 0, 0};    // front, back, top, bottom, left, right
};

// The attributes read and checked (the message without the op's name).
Result<Conv3dAttrs> conv3d_attrs(const Attrs& a);
// One axis's output size: n padded by `before` and `after`, a kernel of k.
int64_t conv3d_out(int64_t n, int64_t k, int64_t before, int64_t after, int64_t stride);
// The output dims [O, T', H', W'] from concrete x [C, T, H, W], weight
// [O, C, kT, kH, kW] and bias [O], or the fault (without the op's name).
Result<Dims> conv3d_dims(const Dims& x, const Dims& w, const Dims* bias, const Conv3dAttrs& c);

}  // namespace arch

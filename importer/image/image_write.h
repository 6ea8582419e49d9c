// Writing an image: an F32 [3, H, W] tensor in [0, 1] as an 8-bit RGB PNG
// (stb_image_write, from Debian's libstb), each value rounded as diffusers'
// numpy_to_pil does: round(x * 255), x first held to [0, 1].
#pragma once

#include <string>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace arch {

Status write_png(const std::string& path, const Tensor& image);

}  // namespace arch
